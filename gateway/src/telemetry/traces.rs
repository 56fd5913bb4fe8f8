//! Installs the process's tracer from `[traces]`: the OTLP/HTTP exporter (protobuf, through
//! [`super::collector::Collector`]), the batch span processor (its own thread; at most `max_queue` spans
//! wait, a span ended while it is full is dropped — the SDK logs the first drop and the total at shutdown),
//! parent-based ratio sampling, and the `service.name` resource.
//!
//! One tracer per process, like the subscriber of `tracing`: [`tracer`] is `None` until [`install`] ran,
//! and then every span helper in [`super::spans`] does nothing at the cost of one atomic read. It must not
//! be installed by a library user that did not ask for `[traces]`.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider,
};

use super::collector::Collector;
use crate::config::TracesConfig;

static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The process's tracer, once [`install`] ran.
pub fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get()
}

/// Whether traces are on (one atomic read).
pub fn on() -> bool {
    TRACER.get().is_some()
}

/// Why the exporter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TracesError {
    /// The exporter (or its HTTP client) could not be built.
    #[error("traces: cannot build the exporter: {0}")]
    Exporter(String),
    /// A tracer was installed already in this process.
    #[error("traces: a tracer is installed already")]
    Installed,
}

/// The installed tracer's provider: [`Traces::shutdown`] exports what is queued (within the export
/// timeout) and stops the processor's thread.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Exports the spans still queued and stops; what the collector does not take in time is dropped.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "traces: the exporter did not shut down cleanly");
        }
    }
}

/// Builds the exporter and processor from `config` and installs the process's tracer.
pub fn install(config: &TracesConfig) -> Result<Traces, TracesError> {
    handlers::install_tls_provider();
    let url = config.traces_url();
    let timeout = Duration::from_millis(config.timeout_ms);
    let client = Collector::new(&url, timeout).map_err(TracesError::Exporter)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .with_timeout(timeout)
        .with_headers(config.headers.clone().into_iter().collect())
        .build()
        .map_err(|e| {
            let said = e.to_string().replace(&url, &handlers::shown_url_text(&url));
            TracesError::Exporter(said)
        })?;
    // The OTEL_BSP_* environment variables apply (the schedule delay, the batch size); the queue's bound
    // is the config's.
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(config.max_queue)
        .with_max_export_batch_size(config.max_queue.min(512))
        .build();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            config.sample_ratio,
        ))))
        .with_resource(
            Resource::builder()
                .with_service_name(config.service_name.clone())
                .build(),
        )
        .build();
    let tracer = provider.tracer("mcpgw");
    TRACER.set(tracer).map_err(|_| TracesError::Installed)?;
    let collector = handlers::shown_url_text(&url);
    tracing::info!(%collector, sample_ratio = config.sample_ratio, "traces exported over OTLP/HTTP");
    Ok(Traces { provider })
}
