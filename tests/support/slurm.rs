//! A private one-node Slurm cluster for one test: `slurmctld` and `slurmd`
//! run in the foreground as this test's children with a configuration, state
//! and spool in the test's own folder, on ports nobody else uses, no munge
//! (`auth/none`); both are stopped on drop, also when the test fails. Two
//! copies of a test each run their own.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct SlurmCluster {
    pub conf: PathBuf,
    dir: PathBuf,
    daemons: Vec<Child>,
}

/// A TCP port free at the moment of asking.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

impl SlurmCluster {
    /// Starts the cluster in `dir/slurm` with `cpus` CPUs on its one node
    /// (more than the machine has is allowed: tasks share CPUs) and waits
    /// until the node takes jobs.
    pub fn start(dir: &Path, cpus: u32) -> SlurmCluster {
        let dir = dir.join("slurm");
        fs::create_dir_all(dir.join("state")).unwrap();
        fs::create_dir_all(dir.join("spool")).unwrap();
        let host = fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
            .to_string();
        let d = dir.display();
        let conf = dir.join("slurm.conf");
        let text = format!(
            "ClusterName=tmfleet{pid}
SlurmctldHost={host}
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=fleet Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
",
            pid = std::process::id(),
            ctld = free_port(),
            slurmd = free_port(),
        );
        fs::write(&conf, text).unwrap();
        let mut cluster = SlurmCluster {
            conf,
            dir,
            daemons: Vec::new(),
        };
        for daemon in ["slurmctld", "slurmd"] {
            let child = Command::new(daemon)
                .args(["-D", "-f"])
                .arg(&cluster.conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{daemon}: {e}"));
            cluster.daemons.push(child);
        }
        cluster.wait_idle();
        cluster
    }

    /// Waits (up to 60 s) until `sinfo` shows the node idle.
    fn wait_idle(&mut self) {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < Duration::from_secs(60) {
            for d in &mut self.daemons {
                if let Ok(Some(status)) = d.try_wait() {
                    panic!("a Slurm daemon exited ({status}): {}", self.logs());
                }
            }
            let out = self.command("sinfo").args(["-h", "-o", "%t"]).output();
            if let Ok(out) = out {
                last = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if last == "idle" {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the Slurm node never became idle (sinfo: {last:?}): {}",
            self.logs()
        );
    }

    /// A Slurm client command (`srun`, `sinfo`) pointed at this cluster.
    pub fn command(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// The daemons' logs, for a failure message.
    pub fn logs(&self) -> String {
        ["slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| {
                let text = fs::read_to_string(self.dir.join(f)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!(
                    "--- {f}:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        // slurmd first (it may still run job steps), then the controller.
        for d in self.daemons.iter_mut().rev() {
            // SAFETY: kill sends a signal to our own child.
            unsafe { libc::kill(d.id() as libc::pid_t, libc::SIGTERM) };
            let start = Instant::now();
            while !matches!(d.try_wait(), Ok(Some(_))) {
                if start.elapsed() > Duration::from_secs(10) {
                    let _ = d.kill();
                    let _ = d.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}
