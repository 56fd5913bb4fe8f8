//! The log writer: each thread appends its lines to a buffer of its own (a lock only it and the writer
//! thread take, the writer only to swap the buffer out), and a thread of its own writes them out, one write
//! per buffer. The writer sleeps until a line arrives while it is idle (that line's thread wakes it: one
//! wake-up, not one per line), gathers for [`GATHER`], writes every buffer out and goes idle again; under
//! load a wake-up carries a millisecond's lines. A worker never waits for standard error (a queue per line
//! cost every request a channel send and a wake-up with the access log on). A thread's buffer holds at
//! most its bound; a line that does not fit is dropped and counted ([`Batched::dropped_lines`]). Lines
//! reach standard error about [`GATHER`] after they were written, each whole; lines of different threads
//! are in order within each thread. Whoever writes to
//! standard error directly (the `listening on` lines) calls [`Batched::flush`] first, so that every line
//! logged before it comes before it.

use std::cell::RefCell;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long the writer gathers lines once woken, before it writes them out.
pub const GATHER: Duration = Duration::from_millis(1);
/// The longest the writer sleeps (a wake-up missed by a race costs at most this).
const IDLE_AT_MOST: Duration = Duration::from_millis(50);

type Buffer = Arc<Mutex<Vec<u8>>>;

/// Where threads put their lines (see the module's text). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Batched(Arc<Shared>);

struct Shared {
    /// The output and a spare buffer, held for a whole pass over the buffers (by the writer thread or by
    /// [`Batched::flush`]), so that passes never interleave.
    out: Mutex<(Box<dyn Write + Send>, Vec<u8>)>,
    /// Every thread's buffer (a thread's own stays here after the thread ends until it is written out).
    buffers: Mutex<Vec<Buffer>>,
    /// The most bytes a thread's buffer holds.
    bound: usize,
    dropped: AtomicU64,
    stop: Mutex<bool>,
    wake: Condvar,
    /// The writer sleeps: the next line's thread wakes it.
    idle: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("bound", &self.bound)
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

/// Keeps the writer thread; dropping it writes out every line written so far and ends the thread.
#[derive(Debug)]
pub struct Guard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

thread_local! {
    /// This thread's buffers, one per writer (tests make several).
    static MINE: RefCell<Vec<(Weak<Shared>, Buffer)>> = const { RefCell::new(Vec::new()) };
}

/// A writer of lines onto `out`, each thread's lines held up to `bound` bytes until the writer thread
/// (named `mcpgw-log`) takes them.
pub fn batched<W: Write + Send + 'static>(out: W, bound: usize) -> (Batched, Guard) {
    let shared = Arc::new(Shared {
        out: Mutex::new((Box::new(out), Vec::new())),
        buffers: Mutex::new(Vec::new()),
        bound,
        dropped: AtomicU64::new(0),
        stop: Mutex::new(false),
        wake: Condvar::new(),
        idle: std::sync::atomic::AtomicBool::new(false),
    });
    let writer = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("mcpgw-log".to_owned())
        .spawn(move || write_out(&writer))
        .ok();
    (Batched(Arc::clone(&shared)), Guard { shared, thread })
}

impl Batched {
    /// Lines dropped because their thread's buffer was full.
    pub fn dropped_lines(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }

    /// Writes out every line written so far, on the calling thread (waiting for a pass of the writer
    /// thread under way): what the caller then writes to standard error directly comes after them.
    pub fn flush(&self) {
        pass(&self.0);
    }

    /// Appends one line (or whatever one write of the formatter holds) to this thread's buffer.
    fn append(&self, line: &[u8]) {
        let shared = &self.0;
        let appended = MINE.try_with(|mine| {
            let mut mine = mine.borrow_mut();
            let at = match mine
                .iter()
                .position(|(owner, _)| owner.as_ptr() == Arc::as_ptr(shared))
            {
                Some(at) => at,
                None => {
                    // A thread's first line for this writer (the writers of ended tests forgotten).
                    mine.retain(|(owner, _)| owner.strong_count() > 0);
                    let buffer: Buffer = Arc::new(Mutex::new(Vec::with_capacity(8 * 1024)));
                    lock(&shared.buffers).push(Arc::clone(&buffer));
                    mine.push((Arc::downgrade(shared), buffer));
                    mine.len() - 1
                }
            };
            let mut held = lock(&mine[at].1);
            if held.len() + line.len() > shared.bound {
                false
            } else {
                held.extend_from_slice(line);
                true
            }
        });
        // Read first: the flag's cache line is written only when the writer sleeps, not per line.
        if appended == Ok(true)
            && shared.idle.load(Ordering::Acquire)
            && shared.idle.swap(false, Ordering::AcqRel)
        {
            // Taken so that the writer is either waiting (and woken) or has not yet checked the buffers.
            let _held = lock(&shared.stop);
            shared.wake.notify_one();
        }
        if appended != Ok(true) {
            shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One formatter's write: [`Batched::append`].
#[derive(Debug)]
pub struct LineSink<'a>(&'a Batched);

impl Write for LineSink<'_> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.0.append(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Batched {
    type Writer = LineSink<'a>;

    fn make_writer(&'a self) -> LineSink<'a> {
        LineSink(self)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The writer thread: asleep while there is nothing to write, woken by the first line after that, a
/// [`pass`] [`GATHER`] later; once more when stopped.
fn write_out(shared: &Shared) {
    loop {
        {
            let stop = lock(&shared.stop);
            if *stop {
                drop(stop);
                pass(shared);
                return;
            }
            shared.idle.store(true, Ordering::Release);
            // A line appended before `idle` was set did not wake anyone: look before sleeping.
            if !lock(&shared.buffers).iter().any(|b| !lock(b).is_empty()) {
                let _ = shared
                    .wake
                    .wait_timeout(stop, IDLE_AT_MOST)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            shared.idle.store(false, Ordering::Release);
        }
        std::thread::sleep(GATHER);
        pass(shared);
    }
}

/// Each buffer swapped for an empty one and written out, one write each; the buffers of threads that
/// ended are forgotten once empty.
fn pass(shared: &Shared) {
    let mut out = lock(&shared.out);
    let (out, spare) = &mut *out;
    let buffers: Vec<Buffer> = lock(&shared.buffers).clone();
    for buffer in &buffers {
        {
            let mut held = lock(buffer);
            if held.is_empty() {
                continue;
            }
            std::mem::swap(&mut *held, spare);
        }
        // A failed write loses these lines only; the next ones are tried again.
        let _ = out.write_all(spare);
        spare.clear();
    }
    let _ = out.flush();
    drop(buffers);
    // Two owners: the list and the thread that writes into it. One: the thread has ended.
    lock(&shared.buffers).retain(|b| Arc::strong_count(b) > 1 || !lock(b).is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// An output that blocks until the test lets it go, then keeps what it is given.
    struct Stalled(mpsc::Receiver<()>, Arc<Mutex<Vec<u8>>>);

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            lock(&self.1).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_standard_error_drops_and_counts_lines_and_never_blocks_a_writer() {
        let (release, stalled) = mpsc::channel();
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (writer, guard) = batched(Stalled(stalled, Arc::clone(&kept)), 80);
        // Ten-byte lines into an 80-byte buffer, the output stalled: the writer thread takes at most one
        // buffer and blocks on it; this thread's next buffer fills and the rest are dropped. Were the
        // buffer unbounded or the write blocking, this loop would grow without end or hang.
        for i in 0..100 {
            writer
                .make_writer()
                .write_all(format!("line {i:04}\n").as_bytes())
                .expect("a write never fails");
            if i == 7 {
                std::thread::sleep(IDLE_AT_MOST); // the writer takes the first eight and stalls
            }
        }
        let dropped = writer.dropped_lines();
        assert!((84..=92).contains(&dropped), "{dropped} dropped");
        drop(release);
        drop(guard);
        let kept = String::from_utf8(lock(&kept).clone()).unwrap_or_default();
        let lines: Vec<&str> = kept.lines().collect();
        assert_eq!(lines.len() as u64 + dropped, 100, "{kept}");
        assert!(lines.windows(2).all(|w| w[0] < w[1]), "in order: {kept}");
    }

    #[test]
    fn lines_of_several_threads_are_written_whole_each_threads_in_order_and_flushed_on_demand() {
        let kept = Arc::new(Mutex::new(Vec::new()));
        struct Keep(Arc<Mutex<Vec<u8>>>);
        impl Write for Keep {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                lock(&self.0).extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (writer, guard) = batched(Keep(Arc::clone(&kept)), 1 << 20);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let line = format!("thread {t} line {i:03}\n");
                        writer.make_writer().write_all(line.as_bytes()).ok();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().ok();
        }
        // A flush returns once every line written before it is out (what is then written to standard
        // error directly comes after them), with no wait for the writer thread's next pass.
        writer.flush();
        assert_eq!(String::from_utf8_lossy(&lock(&kept)).lines().count(), 2000);
        drop(guard);
        let kept = String::from_utf8(lock(&kept).clone()).unwrap_or_default();
        for t in 0..4 {
            let mine: Vec<&str> = kept
                .lines()
                .filter(|l| l.starts_with(&format!("thread {t} ")))
                .collect();
            assert_eq!(mine.len(), 500);
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(writer.dropped_lines(), 0);
        assert_eq!(
            lock(&writer.0.buffers).len(),
            0,
            "ended threads' buffers are forgotten"
        );
    }
}
