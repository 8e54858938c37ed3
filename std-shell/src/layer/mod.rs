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

mod entered;
mod fields;
mod functions;
mod spans;

use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::trace2::at::{self, At};
use crate::xray::record_function_on_ring;
use entered::{pop_through, push, Entered};
use fields::{EventFields, OtherFields, SpanFields};
use flightrec_core::fdr::FunctionAction;
use functions::function_of;
use spans::SpanFunctions;

/// The layer: spans become Trace2 regions and FDR function records, events
/// become Trace2 `data`, `data_json`, `printf` and `error` (see the [module
/// docs](self)). Made by [`layer`]; each part can be turned off.
///
/// ```
/// use flightrec::xray::{names::function_name, Config};
/// use tracing_subscriber::filter::LevelFilter;
/// use tracing_subscriber::prelude::*;
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// // FDR function records only (no Trace2 regions or events), for spans at INFO and above.
/// let only_fdr = flightrec::layer::layer()
///     .with_regions(false)
///     .with_events(false)
///     .with_functions(true);
/// let subscriber = tracing_subscriber::registry().with(only_fdr.with_filter(LevelFilter::INFO));
/// tracing::subscriber::with_default(subscriber, || {
///     let _load = tracing::info_span!("load").entered();
///     let _parse = tracing::debug_span!("parse").entered(); // below INFO: not traced
/// });
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// assert_eq!(flightrec::core::fdr::decoder::verify(&trace)?.function_records, 2);
/// assert_eq!(function_name(1), Some("rust_out::load")); // target::name
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FlightrecLayer {
    regions: bool,
    functions: bool,
    events: bool,
    /// The function ids of the live spans of the subscriber this layer is part
    /// of (made when it is added to one).
    spans: Option<Box<SpanFunctions>>,
}

/// A clone has the same settings and no span table of its own until it is
/// added to a subscriber (span ids are unique only within one).
impl Clone for FlightrecLayer {
    fn clone(&self) -> Self {
        FlightrecLayer {
            regions: self.regions,
            functions: self.functions,
            events: self.events,
            spans: None,
        }
    }
}

/// A [`FlightrecLayer`] with everything on: Trace2 regions and FDR function
/// records for spans, Trace2 events for events. A fuller example is in the
/// [module docs](self).
///
/// ```
/// use tracing_subscriber::prelude::*;
/// let subscriber = tracing_subscriber::registry().with(flightrec::layer::layer());
/// tracing::subscriber::with_default(subscriber, || {
///     let span = tracing::info_span!("work");
///     assert!(!span.is_disabled()); // the layer filters nothing
/// });
/// ```
pub fn layer() -> FlightrecLayer {
    FlightrecLayer::default()
}

impl Default for FlightrecLayer {
    fn default() -> Self {
        FlightrecLayer {
            regions: true,
            functions: true,
            events: true,
            spans: None,
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

/// What the layer keeps in a span's extensions while Trace2 is on: the
/// fields, as the region's message.
struct SpanData {
    fields: SpanFields,
}

impl FlightrecLayer {
    /// A span's enter that needs the registry: a Trace2 region (its metadata
    /// and fields), or a span the table does not know (made while not
    /// recording, or its slot was taken).
    #[inline(never)]
    fn enter_looked_up<S>(&self, id: &Id, ctx: Context<'_, S>, region: bool)
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let functions = self.functions && crate::xray::is_recording();
        if !region && !functions {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let meta = span.metadata();
        let function = functions.then(|| function_of(meta));
        let pushed = push(Entered {
            span: id.into_u64(),
            function,
            region: region.then_some(meta),
        });
        if !pushed {
            return;
        }
        if let Some(f) = function {
            record_function_on_ring(FunctionAction::Enter, f);
        }
        if region {
            let extensions = span.extensions();
            let msg = extensions
                .get::<SpanData>()
                .map(|d| d.fields.0.as_bytes())
                .filter(|m| !m.is_empty());
            let _ = at::region_enter(at(meta), meta.target(), meta.name(), msg);
        }
    }
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
    fn on_layer(&mut self, _subscriber: &mut S) {
        // Span ids are unique within one registry: a table of its own.
        self.spans = Some(SpanFunctions::new());
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if self.functions && crate::xray::is_recording() {
            if let Some(spans) = &self.spans {
                spans.insert(id.into_u64(), function_of(attrs.metadata()));
            }
        }
        if !(self.regions && crate::trace2::enabled()) {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut fields = SpanFields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(SpanData { fields });
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

    #[inline]
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let region = self.regions && crate::trace2::enabled();
        // FDR only, the usual case on a hot path: the function id without a
        // registry lookup when the span was made while recording, the record
        // written inline.
        if !region {
            if !(self.functions && crate::xray::is_recording()) {
                return;
            }
            if let Some(f) = self.spans.as_ref().and_then(|t| t.get(id.into_u64())) {
                if push(Entered {
                    span: id.into_u64(),
                    function: Some(f),
                    region: None,
                }) {
                    record_function_on_ring(FunctionAction::Enter, f);
                }
                return;
            }
        }
        self.enter_looked_up(id, ctx, region);
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        if let Some(spans) = &self.spans {
            spans.remove(id.into_u64());
        }
    }

    #[inline]
    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        // Innermost first: what was entered after this span is left too.
        pop_through(id.into_u64(), leave);
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !(self.events && crate::trace2::enabled()) {
            return;
        }
        let meta = event.metadata();
        if *meta.level() != Level::ERROR {
            // An event with fields besides its message is a `data` event:
            // none of its text is built where no target writes data (the
            // event target below its `eventNesting`, the normal target).
            let mut others = OtherFields::default();
            event.record(&mut others);
            if others.0 > 0 && !at::data_written_here() {
                return;
            }
        }
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

/// Records the exit of an entered span on this thread: the FDR record inline,
/// the Trace2 region's end out of line.
#[inline(always)]
fn leave(e: Entered) {
    if let Some(meta) = e.region {
        leave_region(meta);
    }
    if let Some(f) = e.function {
        record_function_on_ring(FunctionAction::Exit, f);
    }
}

#[inline(never)]
fn leave_region(meta: &'static Metadata<'static>) {
    at::region_leave(at(meta), meta.target(), meta.name());
}
