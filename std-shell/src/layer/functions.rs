//! The FDR function id of every span callsite, named `target::name`: assigned
//! under a lock on a callsite's first span entered while recording, then found
//! without a lock (a span's enter is on the hot path).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use flightrec_core::fdr::FunctionId;
use tracing_core::Metadata;

/// Slots of the lock-free table (callsites beyond it are found under the lock).
const SLOTS: usize = 4096;
/// Slots looked at from a key's home slot before giving up.
const PROBES: usize = 16;

/// The table: each slot's key is a callsite's metadata address (0: empty),
/// written once, after its value.
static KEYS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static VALUES: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];

/// Every callsite's id; the one writer of the table holds it.
static ALL: Mutex<Option<HashMap<usize, FunctionId>>> = Mutex::new(None);

fn home(key: usize) -> usize {
    // Metadata are at least 8-byte aligned statics: mix the higher bits in.
    (key >> 3 ^ key >> 15) % SLOTS
}

/// The id of `meta`'s callsite, assigning and naming it on first use.
#[inline]
pub(crate) fn function_of(meta: &'static Metadata<'static>) -> FunctionId {
    let key = std::ptr::from_ref(meta) as usize;
    let mut i = home(key);
    for _ in 0..PROBES {
        // Acquire: the value was stored before the key (Release).
        match KEYS[i].load(Ordering::Acquire) {
            k if k == key => {
                if let Ok(id) = FunctionId::new(VALUES[i].load(Ordering::Relaxed)) {
                    return id;
                }
                break;
            }
            0 => break,
            _ => i = (i + 1) % SLOTS,
        }
    }
    assign(key, meta)
}

#[cold]
#[inline(never)]
fn assign(key: usize, meta: &'static Metadata<'static>) -> FunctionId {
    let mut all = ALL.lock().unwrap_or_else(|e| e.into_inner());
    let all = all.get_or_insert_with(HashMap::new);
    if let Some(&id) = all.get(&key) {
        return id;
    }
    let name = format!("{}::{}", meta.target(), meta.name());
    let id = crate::xray::function_id(Box::leak(name.into_boxed_str()));
    all.insert(key, id);
    let mut i = home(key);
    for _ in 0..PROBES {
        if KEYS[i].load(Ordering::Relaxed) == 0 {
            VALUES[i].store(id.get(), Ordering::Relaxed);
            KEYS[i].store(key, Ordering::Release);
            break;
        }
        i = (i + 1) % SLOTS;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_core::callsite::{Callsite, Identifier};
    use tracing_core::{Interest, Kind, Level};

    struct Site;
    impl Callsite for Site {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unimplemented!()
        }
    }
    static SITE: Site = Site;

    macro_rules! meta {
        ($name:literal) => {{
            static META: Metadata<'static> = Metadata::new(
                $name,
                "functions_test",
                Level::INFO,
                None,
                None,
                None,
                tracing_core::field::FieldSet::new(&[], Identifier(&SITE)),
                Kind::SPAN,
            );
            &META
        }};
    }

    #[test]
    fn one_id_per_callsite_from_any_thread_named_target_name() {
        let _serial = crate::xray::names::counter_test_lock();
        let (a, b) = (meta!("a"), meta!("b"));
        let ids: Vec<(FunctionId, FunctionId)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (function_of(a), function_of(b))))
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert!(ids.iter().all(|&p| p == ids[0]), "{ids:?}");
        let (ia, ib) = ids[0];
        assert_ne!(ia, ib);
        let name = crate::xray::names::function_name;
        assert_eq!(name(ia.get()), Some("functions_test::a"));
        assert_eq!(name(ib.get()), Some("functions_test::b"));
    }
}
