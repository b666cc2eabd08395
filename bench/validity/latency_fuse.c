/*
 * latency_fuse: one file, /disk, served from a backing file with a per-request
 * service-time model, for a loop device that has a drive's latency (drives.sh's
 * class L). blk-throttle only caps rates; at queue depth 1 it adds no latency.
 *
 * Model (all times from when the request reaches this program):
 *   - `channels` requests are served at once (a SATA SSD's parallel flash
 *     dies behind NCQ; 1 for a disk, which serves one at a time);
 *   - a request waits for the earliest free channel, then takes an access
 *     time: read_us or write_us, or seq_us when it starts where the
 *     previous request ended (a disk's sequential stream: no seek, no
 *     rotation);
 *   - then its transfer, mbps (MB/s, 10^6), over one shared link: transfers
 *     never overlap (a SATA link, a disk's head).
 * The data is read or written first, then the reply waits for the request's
 * modelled completion, so the copy's own time is inside the model's.
 * Discards (fallocate) and flushes pass through with no added time.
 * The file is opened with direct_io (no FUSE page cache): a loop device on it
 * keeps its own queue limits and the backing file's cache cannot go stale.
 *
 * Usage: latency_fuse BACKING MOUNTPOINT [FUSE options]
 *        environment: LAT_READ_US LAT_WRITE_US LAT_SEQ_US LAT_MBPS LAT_CHANNELS
 * On exit it prints the requests it served (count, sizes, deepest
 * concurrency) to stderr.
 */
#define FUSE_USE_VERSION 35
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHANNELS 64

static const char *backing_path;
static int backing_fd = -1;

static struct {
	double read_ns, write_ns, seq_ns, ns_per_byte;
	int channels;
} model;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t channel_free[MAX_CHANNELS];
static int64_t link_free;
static off_t last_end = -1;
static struct {
	uint64_t reads, writes, read_bytes, write_bytes, max_size, size_4k, size_le_128k, size_gt_128k;
	int in_flight, max_in_flight;
} stats;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Takes the request's place in the model; returns its completion time. */
static int64_t admit(off_t off, size_t size, int is_write)
{
	pthread_mutex_lock(&lock);
	int64_t now = now_ns();
	int c = 0;
	for (int i = 1; i < model.channels; i++)
		if (channel_free[i] < channel_free[c])
			c = i;
	int64_t start = channel_free[c] > now ? channel_free[c] : now;
	double access = off == last_end ? model.seq_ns : is_write ? model.write_ns : model.read_ns;
	int64_t accessed = start + (int64_t)access;
	int64_t link_start = accessed > link_free ? accessed : link_free;
	int64_t done = link_start + (int64_t)(model.ns_per_byte * (double)size);
	link_free = done;
	channel_free[c] = done;
	last_end = off + (off_t)size;
	if (is_write) {
		stats.writes++;
		stats.write_bytes += size;
	} else {
		stats.reads++;
		stats.read_bytes += size;
	}
	if (size > stats.max_size)
		stats.max_size = size;
	if (size <= 4096)
		stats.size_4k++;
	else if (size <= 131072)
		stats.size_le_128k++;
	else
		stats.size_gt_128k++;
	if (++stats.in_flight > stats.max_in_flight)
		stats.max_in_flight = stats.in_flight;
	pthread_mutex_unlock(&lock);
	return done;
}

static void complete_at(int64_t done)
{
	/* nanosleep's default 50 us slack would be most of an SSD's access
	 * time; the slack is per thread, and libfuse makes threads as it needs */
	static __thread int slack_set;
	if (!slack_set) {
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
		slack_set = 1;
	}
	struct timespec ts = { .tv_sec = done / 1000000000, .tv_nsec = done % 1000000000 };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	pthread_mutex_lock(&lock);
	stats.in_flight--;
	pthread_mutex_unlock(&lock);
}

static int is_disk(const char *path)
{
	return strcmp(path, "/disk") == 0;
}

static int lf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0700;
		st->st_nlink = 2;
		return 0;
	}
	if (!is_disk(path))
		return -ENOENT;
	struct stat b;
	if (fstat(backing_fd, &b) != 0)
		return -errno;
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = 1;
	st->st_size = b.st_size;
	st->st_blocks = b.st_blocks;
	st->st_blksize = 4096;
	st->st_mtim = b.st_mtim;
	st->st_ctim = b.st_ctim;
	return 0;
}

static int lf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/") != 0)
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "disk", NULL, 0, 0);
	return 0;
}

static int lf_open(const char *path, struct fuse_file_info *fi)
{
	if (!is_disk(path))
		return -ENOENT;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

static int lf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	int64_t done = admit(off, size, 0);
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(backing_fd, buf + got, size - got, off + (off_t)got);
		if (n < 0) {
			int e = errno;
			complete_at(done);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	complete_at(done);
	return (int)got;
}

static int lf_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	int64_t done = admit(off, size, 1);
	size_t put = 0;
	while (put < size) {
		ssize_t n = pwrite(backing_fd, buf + put, size - put, off + (off_t)put);
		if (n < 0) {
			int e = errno;
			complete_at(done);
			return -e;
		}
		put += (size_t)n;
	}
	complete_at(done);
	return (int)put;
}

static int lf_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return fallocate(backing_fd, mode, off, len) == 0 ? 0 : -errno;
}

static int lf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return fdatasync(backing_fd) == 0 ? 0 : -errno;
}

static int lf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)path;
	(void)size;
	(void)fi;
	return -EPERM; /* the drive's size is the backing file's */
}

static void *lf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* async direct I/O requests are background requests: the default 12
	 * would cap a QD32 loop device at 12 in flight */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->attr_timeout = 0;
	return NULL;
}

static void lf_destroy(void *data)
{
	(void)data;
	fprintf(stderr,
		"latency_fuse: served %llu reads (%llu bytes), %llu writes (%llu bytes); "
		"sizes <=4 KiB %llu, <=128 KiB %llu, larger %llu, largest %llu; deepest concurrency %d\n",
		(unsigned long long)stats.reads, (unsigned long long)stats.read_bytes,
		(unsigned long long)stats.writes, (unsigned long long)stats.write_bytes,
		(unsigned long long)stats.size_4k, (unsigned long long)stats.size_le_128k,
		(unsigned long long)stats.size_gt_128k, (unsigned long long)stats.max_size,
		stats.max_in_flight);
}

static const struct fuse_operations ops = {
	.getattr = lf_getattr,
	.readdir = lf_readdir,
	.open = lf_open,
	.read = lf_read,
	.write = lf_write,
	.fallocate = lf_fallocate,
	.fsync = lf_fsync,
	.truncate = lf_truncate,
	.init = lf_init,
	.destroy = lf_destroy,
};

static double env_num(const char *name, double dflt, double min, double max)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || x < min || x > max) {
		fprintf(stderr, "latency_fuse: %s=%s: expected a number from %g to %g\n", name, v, min,
			max);
		exit(2);
	}
	return x;
}

int main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: latency_fuse BACKING MOUNTPOINT [FUSE options]\n");
		return 2;
	}
	backing_path = argv[1];
	backing_fd = open(backing_path, O_RDWR | O_CLOEXEC);
	if (backing_fd < 0) {
		fprintf(stderr, "latency_fuse: %s: %s\n", backing_path, strerror(errno));
		return 1;
	}
	model.read_ns = env_num("LAT_READ_US", 70, 0, 1e6) * 1000;
	model.write_ns = env_num("LAT_WRITE_US", 20, 0, 1e6) * 1000;
	model.seq_ns = env_num("LAT_SEQ_US", 0, 0, 1e6) * 1000;
	model.ns_per_byte = 1000.0 / env_num("LAT_MBPS", 560, 0.001, 1e6);
	model.channels = (int)env_num("LAT_CHANNELS", 8, 1, MAX_CHANNELS);
	fprintf(stderr,
		"latency_fuse: %s: read %.0f us, write %.0f us, sequential %.0f us, %.1f MB/s, %d channels\n",
		backing_path, model.read_ns / 1000, model.write_ns / 1000, model.seq_ns / 1000,
		1000.0 / model.ns_per_byte, model.channels);
	/* fuse_main sees: PROGRAM MOUNTPOINT [options] */
	argv[1] = argv[0];
	return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
