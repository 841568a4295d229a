//! The memory guard: an estimate of a forest's size, and a budget that stops a fit with
//! [`Error::ResourceLimit`] before the model outgrows it.
//!
//! Two checks use the budget ([`memory_limit`], process-wide):
//! - before any tree grows, a *lower bound* of the model's size (fully grown classifiers
//!   keep at least about one leaf per class, each holding a value per class; out-of-bag
//!   sums hold a value per row and class, and each tree's out-of-bag rows a bit a row
//!   until the last tree grows; kept leaf values hold the targets and, per tree, a quarter
//!   of the rows) times the trees asked for, plus a lower bound of the buffers of the trees
//!   growing at once ([`working_bytes_lower_bound`]: 12 bytes a row and worker): requests
//!   that cannot fit are refused at once;
//! - while trees grow, the trees grown so far (with their out-of-bag rows) extrapolated to
//!   all trees asked for: once over the budget less those buffers, no further tree starts,
//!   and the fit fails (the trees already running finish, so the overshoot is at most one
//!   tree per thread).
//!
//! The `Auto` budget ([`MemoryLimit::Auto`], the default) is 80% of the memory a new
//! allocation of this process can still get when a fit starts ([`available_memory`]): the
//! smallest of the host's available memory (Linux's `MemAvailable`), the room left under
//! the process's cgroup limits (cgroup v2 `memory.max` less `memory.current`, cgroup v1
//! `memory.limit_in_bytes` less `memory.usage_in_bytes`, for its cgroup and every
//! ancestor, page cache the kernel can reclaim not counted as used), and the room left
//! under its `RLIMIT_AS` (less the address space in use) and `RLIMIT_DATA` (less the data
//! segment in use). So a fit in a container or under `ulimit -v` is refused with an
//! error instead of aborting the process when an allocation fails. Where none of these
//! can be read (not Linux), there is no `Auto` limit.

use crate::error::{Error, Result};
use crate::params::{ForestParams, SampleCount, Task};
use crate::tree::Tree;
use std::sync::atomic::{AtomicU64, Ordering};

/// How much memory a fitted model may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// No limit.
    Unlimited,
    /// 80% of the memory available to this process when a fit starts: the smallest of the
    /// host's available memory, the room under its cgroup limits (v1 or v2) and under its
    /// `RLIMIT_AS` and `RLIMIT_DATA` (see the [module doc](self)); no limit where none of
    /// these is known.
    Auto,
    /// At most this many bytes.
    Bytes(u64),
}

/// [`MemoryLimit`] packed in one atomic: 0 unlimited, `u64::MAX` auto, else bytes.
static LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Sets the process-wide memory limit for fitted models (the default is [`MemoryLimit::Auto`]).
pub fn set_memory_limit(limit: MemoryLimit) {
    let packed = match limit {
        MemoryLimit::Unlimited => 0,
        MemoryLimit::Auto => u64::MAX,
        MemoryLimit::Bytes(b) => b.clamp(1, u64::MAX - 1),
    };
    LIMIT.store(packed, Ordering::Relaxed);
}

/// The process-wide memory limit for fitted models.
pub fn memory_limit() -> MemoryLimit {
    match LIMIT.load(Ordering::Relaxed) {
        0 => MemoryLimit::Unlimited,
        u64::MAX => MemoryLimit::Auto,
        b => MemoryLimit::Bytes(b),
    }
}

/// The budget in bytes for a fit starting now, if any.
pub fn budget_bytes() -> Option<u64> {
    match memory_limit() {
        MemoryLimit::Unlimited => None,
        MemoryLimit::Bytes(b) => Some(b),
        MemoryLimit::Auto => available_memory().map(|b| b / 5 * 4),
    }
}

/// The memory a new allocation of this process can still get, in bytes: the smallest of
/// the host's available memory, the room under the process's cgroup limits, and the room
/// under its address-space and data limits (see the module doc); `None` where none is
/// known.
pub fn available_memory() -> Option<u64> {
    [host_available(), cgroup_room(), rlimit_room()]
        .into_iter()
        .flatten()
        .min()
}

/// Linux's estimate of the memory available to new allocations (`MemAvailable`).
fn host_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&info, "MemAvailable:")
}

/// A `Name:  1234 kB` field of a `/proc` file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The room under the cgroup memory limits of this process: of every cgroup from its own
/// up to the root of the mounted hierarchy, its limit less its usage (reclaimable page
/// cache, `inactive_file`, not counted as used); the smallest, `None` without a limit.
fn cgroup_room() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    cgroup_room_in(&membership, &mounts)
}

/// [`cgroup_room`] of a process with `/proc/self/cgroup` `membership` and
/// `/proc/self/mountinfo` `mounts`.
fn cgroup_room_in(membership: &str, mounts: &str) -> Option<u64> {
    let mut room: Option<u64> = None;
    for line in membership.lines() {
        // "hierarchy:controllers:path"; v2 has hierarchy 0 and no controllers
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let v2 = id == "0" && controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "memory") {
            continue;
        }
        let Some((root, mount)) = cgroup_mount(mounts, v2) else {
            continue;
        };
        let relative = path.strip_prefix(root.as_str()).unwrap_or(path);
        let mut dir = std::path::PathBuf::from(&mount);
        dir.extend(relative.split('/').filter(|s| !s.is_empty()));
        let files = if v2 {
            ("memory.max", "memory.current", "inactive_file ")
        } else {
            (
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "total_inactive_file ",
            )
        };
        let mut level = Some(dir.as_path());
        while let Some(d) = level.filter(|d| d.starts_with(&mount)) {
            if let Some(r) = cgroup_level_room(d, files) {
                room = Some(room.map_or(r, |m| m.min(r)));
            }
            level = d.parent();
        }
    }
    room
}

/// Limit less usage of one cgroup directory, `None` without a limit there.
fn cgroup_level_room(
    dir: &std::path::Path,
    (max, current, inactive): (&str, &str, &str),
) -> Option<u64> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let limit: u64 = read(max)?.trim().parse().ok()?; // "max": no limit
    if limit >= 1 << 62 {
        return None; // cgroup v1's "unlimited" (page-rounded i64::MAX)
    }
    let used: u64 = read(current)?.trim().parse().ok()?;
    let reclaimable = read("memory.stat")
        .and_then(|stat| {
            let line = stat.lines().find(|l| l.starts_with(inactive))?;
            line[inactive.len()..].trim().parse::<u64>().ok()
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(used.saturating_sub(reclaimable)))
}

/// The (root within the hierarchy, mount point) of the cgroup v2 hierarchy, or of the v1
/// hierarchy with the memory controller, from `/proc/self/mountinfo`.
fn cgroup_mount(mountinfo: &str, v2: bool) -> Option<(String, String)> {
    mountinfo.lines().find_map(|line| {
        // "id parent major:minor root mount-point options [optional...] - fstype source super"
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split(' ').collect();
        let mut after = right.split(' ');
        let (fstype, super_options) = (after.next()?, after.nth(1).unwrap_or(""));
        let wanted = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && super_options.split(',').any(|o| o == "memory")
        };
        (wanted && fields.len() >= 5).then(|| (fields[3].to_string(), fields[4].to_string()))
    })
}

/// The room under this process's `RLIMIT_AS` (less the address space it maps) and
/// `RLIMIT_DATA` (less its data segment); the smaller, `None` without such limits.
#[cfg(unix)]
fn rlimit_room() -> Option<u64> {
    let limit = |resource| {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given
        let ok = unsafe { libc::getrlimit(resource, &mut r) } == 0;
        #[allow(clippy::unnecessary_cast)] // (rlim_t is not u64 on every platform)
        (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
    };
    let (address_space, data) = (limit(libc::RLIMIT_AS), limit(libc::RLIMIT_DATA));
    if address_space.is_none() && data.is_none() {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let room =
        |limit: Option<u64>, field: &str| Some(limit?.saturating_sub(kib_field(&status, field)?));
    [room(address_space, "VmSize:"), room(data, "VmData:")]
        .into_iter()
        .flatten()
        .min()
}

#[cfg(not(unix))]
fn rlimit_room() -> Option<u64> {
    None
}

/// Bytes per node of the tree tables: children, threshold, projection offset, depth and
/// sample count (4 bytes each), impurity and weighted count (8 each).
const NODE_BYTES: u64 = 6 * 4 + 2 * 8;
/// Bytes per node of the packed prediction layout.
const PACKED_NODE_BYTES: u64 = 16;

/// Memory held by a grown tree, with its packed prediction layout.
pub fn tree_bytes(t: &Tree) -> u64 {
    let nodes = t.n_nodes() as u64;
    let terms = t.proj_idx.len() as u64;
    let leaf_rows = t.leaf_rows.as_ref().map_or(0, |r| r.n_bytes());
    // level maps twice: the tree's, and the packed layout's copy
    let maps = 2 * t.level_maps.n_bytes();
    nodes * (NODE_BYTES + PACKED_NODE_BYTES)
        + terms * 16
        + t.value.len() as u64 * 8
        + leaf_rows
        + maps
}

/// A lower bound of the memory a forest of `params` grown on `n_samples` rows takes, with
/// `n_classes_present` distinct classes among the targets (classification).
pub fn forest_bytes_lower_bound(
    params: &ForestParams,
    n_samples: usize,
    n_classes_present: usize,
) -> u64 {
    let k = params.task.n_outputs() as u64;
    let fully_grown = params.max_depth.is_none()
        && params.max_leaf_nodes.is_none()
        && params.min_samples_leaf == SampleCount::Count(1)
        && params.min_samples_split == SampleCount::Count(2)
        && params.min_impurity_decrease == 0.0
        && params.min_weight_fraction_leaf == 0.0;
    // pure leaves, one class each at least; half of them, as duplicated rows with
    // different labels may share a leaf and a bootstrap sample may miss classes
    let leaves = match params.task {
        Task::Classification { .. } if fully_grown => (n_classes_present as u64 / 2).max(1),
        _ => 1,
    };
    let per_tree =
        leaves * (k * 8 + NODE_BYTES + PACKED_NODE_BYTES) + (leaves - 1) * (NODE_BYTES + 16);
    // out-of-bag sums, and every tree's out-of-bag rows (a bit a row) until the last grows
    let (oob, oob_per_tree) = if params.oob {
        (n_samples as u64 * (k * 8 + 4), oob_bits_bytes(n_samples))
    } else {
        (0, 0)
    };
    // kept leaf values: the targets once, and per tree the rows that fill its leaves (8
    // bytes each): a bootstrap sample of n draws holds about 63% of the rows and an
    // honest part its fraction of them, so a quarter of the rows (half the honest
    // fraction, at most a quarter, for honest trees) is below either
    let (targets, rows_per_tree) = if params.store_leaf_values {
        let k_targets = params.task.n_targets() as u64;
        let fraction = if params.honest_fraction > 0.0 {
            (params.honest_fraction / 2.0).min(0.25)
        } else {
            0.25
        };
        let rows = (n_samples as f64 * fraction) as u64;
        (n_samples as u64 * k_targets * 8, rows * 8)
    } else {
        (0, 0)
    };
    (params.n_estimators as u64).saturating_mul(per_tree + rows_per_tree + oob_per_tree)
        + oob
        + targets
}

/// Bytes of one tree's out-of-bag rows while the fit holds them: a bit a row.
fn oob_bits_bytes(n_samples: usize) -> u64 {
    n_samples.div_ceil(64) as u64 * 8
}

/// Bytes for a message: "1.23 GB", "456 kB", ...
fn gib(b: u64) -> String {
    match b {
        0..=9_999 => format!("{b} bytes"),
        10_000..=9_999_999 => format!("{:.0} kB", b as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.0} MB", b as f64 / 1e6),
        _ => format!("{:.2} GB", b as f64 / 1e9),
    }
}

/// Bytes each training row takes, at least, in the buffers of every worker growing a tree:
/// its weight in the tree (a byte for bootstrap counts, 8 with sample or class weights),
/// and for the rows a tree draws, their places among a node's rows (4), their projected
/// values (4) and the scan's tags or sorted pairs (4 or 8); measured, with everything a
/// fit allocates, 18-33 (benches/results/tree_memory.md).
pub const WORKING_BYTES_PER_ROW: u64 = 12;

/// A lower bound of the memory a fit on `n_samples` rows uses while `workers` trees grow
/// at once, beyond X, the targets and the trees ([`WORKING_BYTES_PER_ROW`] a row and
/// worker; the measured use is two to four times that, see the README's resource limits).
pub fn working_bytes_lower_bound(n_samples: usize, workers: usize) -> u64 {
    (n_samples as u64)
        .saturating_mul(workers as u64)
        .saturating_mul(WORKING_BYTES_PER_ROW)
}

/// Refuses a fit whose lower-bound size (the model, and the buffers of its `workers`
/// growing trees at once) is over the budget.
///
/// # Errors
/// [`Error::ResourceLimit`] naming the estimates and the budget.
pub fn check_request(
    params: &ForestParams,
    n_samples: usize,
    n_classes_present: usize,
    workers: usize,
    budget: Option<u64>,
) -> Result<()> {
    let Some(budget) = budget else {
        return Ok(());
    };
    let model = forest_bytes_lower_bound(params, n_samples, n_classes_present);
    let working = working_bytes_lower_bound(n_samples, workers);
    if model.saturating_add(working) <= budget {
        return Ok(());
    }
    Err(Error::ResourceLimit(format!(
        "{} trees on {n_samples} rows with {} outputs need at least {} for the model and {} \
         while {workers} trees grow at once, over the memory limit of {}; use fewer trees, \
         threads (n_jobs), max_depth, max_leaf_nodes or min_samples_leaf, or raise the \
         limit (obliqueforest.set_memory_limit)",
        params.n_estimators,
        params.task.n_outputs(),
        gib(model),
        gib(working),
        gib(budget)
    )))
}

/// Running total of the trees of one fit, extrapolated to all the trees asked for.
pub(crate) struct Tally {
    budget: Option<u64>,
    base: u64,
    total_trees: u64,
    grown: AtomicU64,
    bytes: AtomicU64,
}

impl Tally {
    /// `base` bytes are already held (warm start), `n_more` trees are to grow.
    pub(crate) fn new(budget: Option<u64>, base: u64, n_more: usize) -> Self {
        Tally {
            budget,
            base,
            total_trees: n_more as u64,
            grown: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Counts a grown tree, and `held` bytes the fit keeps of it until the last tree grows
    /// (its out-of-bag rows).
    pub(crate) fn add(&self, t: &Tree, held: u64) {
        self.bytes
            .fetch_add(tree_bytes(t) + held, Ordering::Relaxed);
        self.grown.fetch_add(1, Ordering::Relaxed);
    }

    /// The projected size of the whole forest.
    fn projected(&self) -> (u64, u64) {
        let grown = self.grown.load(Ordering::Relaxed);
        let bytes = self.bytes.load(Ordering::Relaxed);
        let projected = if grown == 0 {
            self.base
        } else {
            self.base + (bytes as f64 / grown as f64 * self.total_trees as f64) as u64
        };
        (grown, projected)
    }

    /// Whether the forest is on course to outgrow the budget.
    pub(crate) fn over(&self) -> bool {
        self.budget.is_some_and(|b| self.projected().1 > b)
    }

    /// The error for a fit stopped by [`Tally::over`].
    pub(crate) fn error(&self) -> Error {
        let (grown, projected) = self.projected();
        Error::ResourceLimit(format!(
            "the forest would take about {} ({grown} of {} trees grown, {} each on \
             average), over the memory limit of {}; use fewer trees, max_depth, \
             max_leaf_nodes or min_samples_leaf, or raise the limit \
             (obliqueforest.set_memory_limit)",
            gib(projected),
            self.total_trees,
            gib(self.bytes.load(Ordering::Relaxed) / grown.max(1)),
            gib(self.budget.unwrap_or(0)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_room_is_the_smallest_limit_less_usage_up_the_hierarchy() {
        let root = std::env::temp_dir().join(format!("obliqueforest-cg-{}", std::process::id()));
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // v2: the process in /a/b; /a has the tighter room (no reclaimable cache there)
        write("v2/a/b/memory.max", "1000000\n");
        write("v2/a/b/memory.current", "400000\n");
        write(
            "v2/a/b/memory.stat",
            "anon 1\ninactive_file 100000\nactive_file 5\n",
        );
        write("v2/a/memory.max", "500000\n");
        write("v2/a/memory.current", "450000\n");
        write("v2/memory.max", "max\n");
        let v2 = root.join("v2");
        let mounts = format!(
            "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
             41 31 0:38 / {} rw,relatime shared:9 - cgroup2 cgroup2 rw\n",
            v2.display()
        );
        assert_eq!(cgroup_room_in("0::/a/b\n", &mounts), Some(50_000));
        assert_eq!(cgroup_room_in("0::/a/b\n", ""), None);
        // without limits: none
        write("v2/c/memory.max", "max\n");
        write("v2/c/memory.current", "7\n");
        assert_eq!(cgroup_room_in("0::/c\n", &mounts), None);
        // v1: the memory controller's hierarchy, "unlimited" above
        write("v1/x/memory.limit_in_bytes", "2000000\n");
        write("v1/x/memory.usage_in_bytes", "1500000\n");
        write("v1/x/memory.stat", "cache 9\ntotal_inactive_file 300000\n");
        write("v1/memory.limit_in_bytes", "9223372036854771712\n");
        write("v1/memory.usage_in_bytes", "1\n");
        let v1 = root.join("v1");
        let mounts = format!(
            "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
             35 31 0:32 / {} rw,relatime - cgroup cgroup rw,memory\n",
            v1.display()
        );
        let membership = "8:pids:/\n4:memory:/x\n1:cpu:/\n0::/\n";
        assert_eq!(cgroup_room_in(membership, &mounts), Some(800_000));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn available_memory_is_known_on_linux_and_within_the_host() {
        if cfg!(target_os = "linux") {
            let host = host_available().expect("MemAvailable");
            let all = available_memory().unwrap();
            assert!(0 < all && all <= host);
        }
    }

    #[test]
    fn limit_round_trips_and_lower_bound_grows_with_classes_and_trees() {
        // (the process-wide setting is left alone: other tests fit in parallel)
        assert_eq!(memory_limit(), MemoryLimit::Auto);
        let mut p = ForestParams::classification(10_000);
        p.n_estimators = 100;
        let big = forest_bytes_lower_bound(&p, 100_000, 10_000);
        assert!(big > 30_000_000_000, "{big}");
        assert!(check_request(&p, 100_000, 10_000, 1, Some(24_000_000_000)).is_err());
        assert!(check_request(&p, 100_000, 10_000, 1, None).is_ok());
        p.max_depth = Some(3);
        assert!(forest_bytes_lower_bound(&p, 100_000, 10_000) < 100_000_000);
        // out-of-bag estimates: the sums once, and every tree's rows (a bit a row) while the
        // trees grow
        let without = forest_bytes_lower_bound(&p, 100_000, 10_000);
        p.oob = true;
        let with = forest_bytes_lower_bound(&p, 100_000, 10_000);
        assert_eq!(with - without, 100_000 * (10_000 * 8 + 4) + 100 * 12_504);
        let mut two = ForestParams::classification(2);
        two.n_estimators = 100;
        // the model of 100 binary trees is small; the rows' buffers are 12 MB a worker
        assert!(check_request(&two, 1_000_000, 2, 1, Some(13_000_000)).is_ok());
        let refused = check_request(&two, 1_000_000, 2, 2, Some(13_000_000));
        let Err(Error::ResourceLimit(msg)) = refused else {
            panic!("two workers' buffers are over the limit: {refused:?}");
        };
        assert!(msg.contains("24 MB while 2 trees grow at once"), "{msg}");
    }
}
