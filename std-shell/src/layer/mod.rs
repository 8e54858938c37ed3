//! A [`tracing-subscriber`](tracing_subscriber) layer: a program that already
//! uses `tracing` gets Trace2 and XRay FDR by adding one line to its subscriber.
//!
//! ```
//! use tracing_subscriber::prelude::*;
//! # let dir = tempfile::tempdir()?;
//! # let trace = dir.path().join("trace");
//! # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
//! // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
//! let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
//! tracing_subscriber::registry()
//!     .with(flightrec::layer::layer()) // the one line
//!     .init();
//!
//! #[tracing::instrument]
//! fn refresh(entries: u32) {
//!     tracing::info!(entries, "refreshed");
//! }
//! refresh(12);
//! drop(t2);
//!
//! let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
//!     .lines()
//!     .map(serde_json::from_str)
//!     .collect::<Result<_, _>>()?;
//! let enter = events.iter().find(|e| e["event"] == "region_enter").unwrap();
//! // category: the span's target; label: its name; message: its fields.
//! assert!(enter["category"] == "rust_out" && enter["label"] == "refresh" && enter["msg"] == "entries=12");
//! let data = events.iter().find(|e| e["event"] == "data_json").unwrap();
//! assert!(data["key"] == "refreshed" && data["value"] == serde_json::json!({ "entries": 12 }));
//! assert_eq!(data["nesting"], 2); // inside the span's region
//! assert_eq!(events.iter().filter(|e| e["event"] == "region_leave").count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What becomes what
//!
//! * A span, each time it is entered on a thread: a Trace2 region on that
//!   thread (`region_enter` when entered, `region_leave` when exited; category
//!   = the span's target, label = its name, message = its fields as
//!   `name=value` pairs) and an FDR function entry and exit on that thread's
//!   ring. Every span callsite is one FDR function, named `target::name` in
//!   the trace's names file.
//! * An event at level `ERROR`: a Trace2 `error` (its message and fields).
//! * Another event with a message and no other field: a Trace2 `printf`.
//! * An event with one field and no message: a Trace2 `data` (key = the
//!   field's name, category = the event's target).
//! * An event with more fields, or fields and a message: a Trace2 `data_json`
//!   whose key is the message (or the event's name) and whose value is an
//!   object of the fields (numbers and booleans as JSON numbers and booleans).
//!
//! Enter and exit records are kept per thread: an instrumented future entered
//! on one worker thread and later on another leaves balanced regions and FDR
//! calls on each. If a span is exited while spans entered after it on the same
//! thread are still open (guards dropped out of order), those are left first,
//! so every thread's stack stays balanced; their own exits later are ignored.
//!
//! The layer adds no filtering of its own: `EnvFilter`, per-layer filters
//! ([`Layer::with_filter`]) and level filters select what reaches it, as for
//! any other layer. Programs that log with the `log` crate can forward it
//! through `tracing-log`'s `LogTracer`.

mod fields;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::RwLock;

use flightrec_core::fdr::FunctionId;
use tracing_core::callsite::Identifier;
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::trace2::at::{self, At};
use fields::{EventFields, SpanFields};

/// The layer: spans become Trace2 regions and FDR function records, events
/// become Trace2 `data`, `data_json`, `printf` and `error` (see the [module
/// docs](self)). Made by [`layer`]; each part can be turned off.
///
/// ```
/// use tracing_subscriber::prelude::*;
/// use tracing_subscriber::filter::LevelFilter;
/// // FDR function records only, and only for spans at INFO and above.
/// let only_fdr = flightrec::layer::layer().with_regions(false).with_events(false);
/// let subscriber = tracing_subscriber::registry().with(only_fdr.with_filter(LevelFilter::INFO));
/// tracing::subscriber::with_default(subscriber, || {
///     let _s = tracing::info_span!("load").entered();
/// });
/// ```
#[derive(Clone, Debug)]
pub struct FlightrecLayer {
    regions: bool,
    functions: bool,
    events: bool,
}

/// A [`FlightrecLayer`] with everything on: Trace2 regions and FDR function
/// records for spans, Trace2 events for events. Example in the [module
/// docs](self).
pub fn layer() -> FlightrecLayer {
    FlightrecLayer::default()
}

impl Default for FlightrecLayer {
    fn default() -> Self {
        FlightrecLayer {
            regions: true,
            functions: true,
            events: true,
        }
    }
}

impl FlightrecLayer {
    /// Whether spans become Trace2 regions (default: yes). Example on
    /// [`FlightrecLayer`].
    pub fn with_regions(mut self, on: bool) -> Self {
        self.regions = on;
        self
    }

    /// Whether spans become FDR function records (default: yes). Example on
    /// [`FlightrecLayer`].
    pub fn with_functions(mut self, on: bool) -> Self {
        self.functions = on;
        self
    }

    /// Whether events become Trace2 events (default: yes). Example on
    /// [`FlightrecLayer`].
    pub fn with_events(mut self, on: bool) -> Self {
        self.events = on;
        self
    }
}

/// What the layer keeps in a span's extensions.
struct SpanData {
    /// The callsite's FDR function id (none while XRay was not initialised
    /// when the span was made).
    function: Option<FunctionId>,
    /// The fields as the region's message (kept only while Trace2 is on).
    fields: SpanFields,
}

/// One span entered on this thread and not exited yet.
struct Entered {
    span: u64,
    function: Option<FunctionId>,
    meta: &'static Metadata<'static>,
    region: bool,
}

thread_local! {
    /// The spans entered on this thread, innermost last.
    static STACK: RefCell<Vec<Entered>> = const { RefCell::new(Vec::new()) };
}

/// The FDR function id of every span callsite seen so far.
static FUNCTIONS: RwLock<Option<HashMap<Identifier, FunctionId>>> = RwLock::new(None);

/// The function id of `meta`'s callsite, named `target::name` on first use.
fn function_of(meta: &'static Metadata<'static>) -> FunctionId {
    let key = meta.callsite();
    if let Some(&id) = FUNCTIONS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&key))
    {
        return id;
    }
    let mut map = FUNCTIONS.write().unwrap_or_else(|e| e.into_inner());
    *map.get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| {
            let name = format!("{}::{}", meta.target(), meta.name());
            crate::xray::function_id(Box::leak(name.into_boxed_str()))
        })
}

fn at(meta: &'static Metadata<'static>) -> At<'static> {
    At {
        file: meta.file(),
        line: meta.line(),
    }
}

impl<S> Layer<S> for FlightrecLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let function = (self.functions && crate::xray::frequency().is_some())
            .then(|| function_of(attrs.metadata()));
        let mut fields = SpanFields::default();
        if self.regions && crate::trace2::enabled() {
            attrs.record(&mut fields);
        }
        span.extensions_mut().insert(SpanData { function, fields });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if !(self.regions && crate::trace2::enabled()) {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(data) = extensions.get_mut::<SpanData>() {
            values.record(&mut data.fields);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let region = self.regions && crate::trace2::enabled();
        let functions = self.functions && crate::xray::is_recording();
        if !region && !functions {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let meta = span.metadata();
        let extensions = span.extensions();
        let Some(data) = extensions.get::<SpanData>() else {
            return;
        };
        let function = data.function.filter(|_| functions);
        let pushed = STACK
            .try_with(|s| {
                s.try_borrow_mut()
                    .map(|mut s| {
                        s.push(Entered {
                            span: id.into_u64(),
                            function,
                            meta,
                            region,
                        })
                    })
                    .is_ok()
            })
            .unwrap_or(false);
        if !pushed {
            return;
        }
        if let Some(f) = function {
            crate::xray::record_enter(f);
        }
        if region {
            let msg = (!data.fields.0.is_empty()).then_some(data.fields.0.as_bytes());
            let _ = at::region_enter(at(meta), meta.target(), meta.name(), msg);
        }
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        let span = id.into_u64();
        let _ = STACK.try_with(|s| {
            let Ok(mut s) = s.try_borrow_mut() else {
                return;
            };
            let Some(i) = s.iter().rposition(|e| e.span == span) else {
                return;
            };
            // Innermost first: what was entered after this span is left too.
            while s.len() > i {
                if let Some(e) = s.pop() {
                    leave(&e);
                }
            }
        });
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !(self.events && crate::trace2::enabled()) {
            return;
        }
        let meta = event.metadata();
        let mut fields = EventFields::default();
        event.record(&mut fields);
        let at = at(meta);
        if *meta.level() == Level::ERROR {
            let message = fields.message.as_deref().unwrap_or(meta.name());
            let text = if fields.pairs.is_empty() {
                message.to_owned()
            } else {
                format!("{message} {}", fields.pairs)
            };
            at::error(at, message.as_bytes(), text.as_bytes());
            return;
        }
        match (&fields.message, &fields.single) {
            (Some(message), _) if fields.count == 0 => at::printf(at, message.as_bytes()),
            (None, Some((name, value))) => {
                at::data(at, meta.target(), name, value.as_bytes(), false)
            }
            (message, _) => {
                let key = message.as_deref().unwrap_or(meta.name());
                let json = fields.json_object();
                at::data(at, meta.target(), key, json.as_bytes(), true);
            }
        }
    }
}

/// Records the exit of an entered span on this thread.
fn leave(e: &Entered) {
    if e.region {
        at::region_leave(at(e.meta), e.meta.target(), e.meta.name());
    }
    if let Some(f) = e.function {
        crate::xray::record_exit(f);
    }
}
