//! The prediction as a listener of a pass's I/O events: the engine reports
//! each record read and each completion; this decides whether the pass can
//! predict and feeds the model.

use super::{TaskMarks, TaskTimeModel, TaskTimePrediction};
use crate::engine::IoListener;
use results::NoTaskTime;
use trace_format::IoRecord;

/// The task-time prediction listening to one pass: the model, or why this
/// pass has none (the limits are stated here, not in the engine).
#[derive(Debug, Clone)]
pub enum TaskObserver {
    Listening(Box<TaskTimeModel>),
    Off(NoTaskTime),
}

impl TaskObserver {
    /// The observer of a pass: `realtime` timing, `several_rings`.
    pub fn for_pass(realtime: bool, several_rings: bool, marks: TaskMarks) -> TaskObserver {
        if !realtime {
            TaskObserver::Off(NoTaskTime::NotRealtime)
        } else if several_rings {
            TaskObserver::Off(NoTaskTime::SeveralRings)
        } else {
            TaskObserver::Listening(Box::new(TaskTimeModel::new(marks)))
        }
    }

    /// The prediction, or why there is none: the pass had none, or the
    /// model could not predict (no original completions, a latency never
    /// came).
    pub fn finish(self) -> Result<TaskTimePrediction, NoTaskTime> {
        match self {
            TaskObserver::Listening(model) => model.finish(),
            TaskObserver::Off(why) => Err(why),
        }
    }
}

impl IoListener for TaskObserver {
    fn record_read(&mut self, index: u64, rec: &IoRecord, sent: bool) {
        if let TaskObserver::Listening(model) = self {
            model.admit(index, rec, sent);
        }
    }

    fn completed(&mut self, index: u64, latency_ns: u64) {
        if let TaskObserver::Listening(model) = self {
            model.completed(index, latency_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_format::{Bytes, Flags, Nanos, Op};

    #[test]
    fn only_a_realtime_pass_on_one_ring_listens() {
        let marks = TaskMarks::default();
        assert!(matches!(
            TaskObserver::for_pass(false, false, marks),
            TaskObserver::Off(NoTaskTime::NotRealtime)
        ));
        assert!(matches!(
            TaskObserver::for_pass(true, true, marks),
            TaskObserver::Off(NoTaskTime::SeveralRings)
        ));
        let rec = IoRecord {
            time: Nanos(0),
            op: Op::Read,
            offset: Bytes(0),
            len: Bytes(4096),
            flags: Flags::NONE,
            latency: Some(Nanos(100)),
            stream: None,
            device: 0,
        };
        let mut off = TaskObserver::for_pass(false, false, marks);
        off.record_read(0, &rec, true);
        off.completed(0, 50);
        assert_eq!(off.finish(), Err(NoTaskTime::NotRealtime));
        let mut on = TaskObserver::for_pass(true, false, marks);
        on.record_read(0, &rec, true);
        on.completed(0, 50);
        assert_eq!(on.finish().map(|p| p.captured), Ok(Nanos(100)));
    }
}
