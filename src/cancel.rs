//! Cancellation: a library that lives inside other people's processes must stop when they
//! ask (Ctrl-C, a stop button, a timeout).
//!
//! A [`Cancel`] token is in effect on the thread that runs
//! [`Cancel::run`] and, carried by `install`, on every pool thread working for that call.
//! Long loops poll [`requested`] (per tree node while growing, per row block while
//! predicting); once the token is cancelled they stop early, and the public call returns
//! [`Error::Cancelled`] instead of a partial result. A call may also bring a *poll*
//! function, run about every [`POLL_INTERVAL`] on the calling thread while its workers
//! compute (the Python boundary checks for Ctrl-C there): the calling thread never runs
//! tree work itself while a pool computes, so it is free to wait and poll.

use crate::error::{Error, Result};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the calling thread runs a call's poll function while the call computes.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// A cancellation switch shared between the thread that asks for a computation and the
/// threads that may stop it (clones share the switch).
///
/// ```
/// use obliqueforest::{Cancel, Error};
/// let cancel = Cancel::new();
/// cancel.cancel(); // e.g. from another thread, or a UI's stop button
/// let result = cancel.run(|| obliqueforest::cancel::check());
/// assert_eq!(result, Err(Error::Cancelled));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

/// What the current thread polls: the token of the call it works for, and on the calling
/// thread the call's poll function with the time it last ran.
struct Context {
    flag: Arc<AtomicBool>,
    poll: Option<Poll>,
}

struct Poll {
    f: Box<dyn FnMut() -> bool>,
    last: Instant,
}

thread_local! {
    static CURRENT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every computation running under this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `f` on this thread with this token in effect: forest work started inside `f`
    /// (fit, predict, apply, ...) stops soon after the token is cancelled and returns
    /// [`Error::Cancelled`].
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        with_context(
            Context {
                flag: self.0.clone(),
                poll: None,
            },
            f,
        )
    }

    /// [`Cancel::run`], also calling `poll` on this thread about every [`POLL_INTERVAL`]
    /// while `f` computes; `poll` returning `true` cancels the token.
    pub fn run_polling<R>(&self, poll: impl FnMut() -> bool + 'static, f: impl FnOnce() -> R) -> R {
        with_context(
            Context {
                flag: self.0.clone(),
                poll: Some(Poll {
                    f: Box::new(poll),
                    last: Instant::now(),
                }),
            },
            f,
        )
    }
}

/// Runs `f` with `ctx` as this thread's context, restoring the previous one afterwards
/// (also when `f` panics).
fn with_context<R>(ctx: Context, f: impl FnOnce() -> R) -> R {
    let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(ctx)));
    f()
}

/// Puts a thread's previous context back when dropped.
struct Restore(Option<Context>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Whether the current computation should stop. Cheap (a thread-local read and an atomic
/// load); on a calling thread with a poll function, runs it when it is due.
#[inline]
pub fn requested() -> bool {
    CURRENT.with(|c| {
        let Ok(mut c) = c.try_borrow_mut() else {
            return false; // inside this thread's own poll function
        };
        let Some(ctx) = c.as_mut() else {
            return false;
        };
        if ctx.flag.load(Ordering::Relaxed) {
            return true;
        }
        if let Some(poll) = ctx.poll.as_mut() {
            if poll.last.elapsed() >= POLL_INTERVAL {
                poll.last = Instant::now();
                if (poll.f)() {
                    ctx.flag.store(true, Ordering::Relaxed);
                    return true;
                }
            }
        }
        false
    })
}

/// `Err(Error::Cancelled)` when the current computation should stop.
///
/// # Errors
/// [`Error::Cancelled`] once the token in effect is cancelled.
pub fn check() -> Result<()> {
    if requested() {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

/// The current token's switch, to carry into pool threads.
pub(crate) fn carry() -> Carry {
    Carry(CURRENT.with(|c| c.try_borrow().ok()?.as_ref().map(|ctx| ctx.flag.clone())))
}

/// The token of a call, carried into the pool threads that work for it.
#[derive(Clone)]
pub(crate) struct Carry(Option<Arc<AtomicBool>>);

impl Carry {
    /// Runs `f` on this (pool) thread with the carried token in effect, or with none when
    /// the call had none: a pool thread may run tasks of several calls in turn (and steal
    /// one call's task while it waits inside another's), so each task sets its own.
    pub(crate) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.0 {
            Some(flag) => with_context(
                Context {
                    flag: flag.clone(),
                    poll: None,
                },
                f,
            ),
            None => without_context(f),
        }
    }
}

/// Runs `f` with no token in effect on this thread, restoring the previous one afterwards.
fn without_context<R>(f: impl FnOnce() -> R) -> R {
    let _restore = Restore(CURRENT.with(|c| c.borrow_mut().take()));
    f()
}

/// Runs `f` in `pool` with the caller's token in effect on the thread that starts it
/// (parallel iterators inside `f` carry it on with [`carry`]). The calling thread waits,
/// running the call's poll function (if any) about every [`POLL_INTERVAL`]: a cancel
/// requested there reaches the workers through the shared switch.
pub(crate) fn install<R: Send>(pool: &rayon::ThreadPool, f: impl FnOnce() -> R + Send) -> R {
    /// Tells the caller the task ended, also when it panicked (the scope re-raises it).
    struct Done<'a>(&'a AtomicBool, std::thread::Thread);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
            self.1.unpark();
        }
    }
    let carried = carry();
    let done = AtomicBool::new(false);
    let mut out = None;
    pool.in_place_scope(|scope| {
        let (out, done_ref) = (&mut out, &done);
        let caller = std::thread::current();
        scope.spawn(move |_| {
            let _done = Done(done_ref, caller);
            *out = Some(carried.run(f));
        });
        while !done.load(Ordering::Acquire) {
            std::thread::park_timeout(POLL_INTERVAL);
            requested();
        }
    });
    out.expect("the scope waited for its task")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_token_stops_work_in_a_pool() {
        let pool = crate::threads::thread_pool(2).unwrap();
        let cancel = Cancel::new();
        let seen = std::sync::atomic::AtomicUsize::new(0);
        let out: Vec<Option<usize>> = cancel.run(|| {
            use rayon::prelude::*;
            let carried = carry();
            install(&pool, || {
                (0..1000usize)
                    .into_par_iter()
                    .map(|i| {
                        carried.run(|| {
                            if i == 10 {
                                cancel.cancel();
                            }
                            if requested() {
                                return None;
                            }
                            seen.fetch_add(1, Ordering::Relaxed);
                            Some(i)
                        })
                    })
                    .collect()
            })
        });
        assert_eq!(out.len(), 1000);
        assert!(seen.load(Ordering::Relaxed) < 1000);
        assert!(
            !Cancel::new().run(requested),
            "a fresh token is not cancelled"
        );
        assert!(!requested(), "no token outside a run");
    }

    #[test]
    fn the_poll_function_cancels_from_the_calling_thread() {
        let pool = crate::threads::thread_pool(2).unwrap();
        let cancel = Cancel::new();
        let start = Instant::now();
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = polls.clone();
        let stopped = cancel.run_polling(
            move || counted.fetch_add(1, Ordering::Relaxed) >= 2,
            || {
                install(&pool, || {
                    // a long loop of a worker, polling as the tree builder does
                    while !requested() {
                        assert!(start.elapsed() < Duration::from_secs(20), "never cancelled");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    true
                })
            },
        );
        assert!(stopped && cancel.is_cancelled());
        assert!(polls.load(Ordering::Relaxed) >= 3);
    }
}
