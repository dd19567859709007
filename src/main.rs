//! The `ebbflow` binary.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use ebbflow::rpc::compute::{start_compute, ComputeConfig};
use ebbflow::rpc::ClusterSecret;
use ebbflow::server::{start, ClusterRpc, ServerConfig};

/// Streaming moves many small rows, keys and chunks between threads (an
/// actor allocates a chunk, the next one frees it); glibc's malloc spent
/// about a third of the CPU of a saturated aggregation job on that.
/// jemalloc is as fast as mimalloc there and, with the state store's
/// blocks and files churning, keeps peak RSS lower: 655–697 MiB against
/// mimalloc's 801–1,132 for `ci/bench-peers`' 1M-group job on a fresh
/// server.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its start (`_RJEM_MALLOC_CONF` in the
/// environment still overrides them): freed pages go back to the system
/// within 0.3 s, by a background thread, instead of after ten. Peak RSS
/// of the 1M-group job: 616–629 MiB against 689–699 with a 1 s delay, at
/// the same rows/s; since compacted files leave the caches, 319–331 MiB
/// against 338–376 with a 1 s delay.
#[export_name = "_rjem_malloc_conf"]
pub static MALLOC_CONF: &[u8; 59] = b"background_thread:true,dirty_decay_ms:300,muzzy_decay_ms:0\0";

#[derive(Parser)]
#[command(
    name = "ebbflow",
    version,
    about = "A streaming SQL database that scales running jobs online"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Frontend, meta and compute nodes in one process (the default).
    Playground(PlaygroundArgs),
    /// A cluster's meta with the pgwire frontend; compute processes
    /// register on its RPC address.
    Meta(MetaArgs),
    /// A cluster's compute process: hosts actors for meta.
    Compute(ComputeArgs),
}

/// What the playground and a cluster's meta both serve: pgwire, the state
/// and meta stores, barriers, garbage collection, metrics.
#[derive(clap::Args, Clone)]
struct ServerArgs {
    /// Address of the PostgreSQL wire protocol listener.
    #[arg(long, default_value = "127.0.0.1:4566")]
    listen: SocketAddr,
    /// Where state is kept (the embedded object store and meta store).
    #[arg(long, default_value = "./ebbflow-data")]
    data_dir: PathBuf,
    /// Object store for state files: `file:///dir` or `s3://bucket/prefix`
    /// (configured by the AWS_* variables; in a cluster, the one every
    /// compute process uses). Default: `<data-dir>/state`.
    #[arg(long)]
    state_store: Option<String>,
    /// Meta store: `sqlite://path` or `postgres://user@host:port/db`.
    /// Default: `<data-dir>/meta.db`.
    #[arg(long)]
    meta_store: Option<String>,
    /// How long a state file no version references is kept before the
    /// garbage collector deletes it.
    #[arg(long, default_value_t = 60_000)]
    gc_grace_ms: u64,
    /// How often the garbage collector runs.
    #[arg(long, default_value_t = 30_000)]
    gc_interval_ms: u64,
    /// Interval between checkpoint barriers.
    #[arg(long, default_value_t = 250)]
    barrier_interval_ms: u64,
    /// Prometheus metrics (`GET /metrics`). Default 127.0.0.1:1250, skipped
    /// with a warning when that port is taken; an address given here must
    /// bind.
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
}

#[derive(clap::Args, Clone)]
struct MetaArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Address of meta's RPC listener, where compute processes register.
    #[arg(long, default_value = "127.0.0.1:5690")]
    rpc_listen: SocketAddr,
    /// A file holding the secret every process of the cluster shares (at
    /// least 16 printable characters).
    #[arg(long)]
    cluster_secret_file: PathBuf,
}

#[derive(clap::Args, Clone)]
struct ComputeArgs {
    /// Meta's RPC address (`host:port`).
    #[arg(long)]
    meta: String,
    /// Address of this process's RPC listener (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:5688")]
    rpc_listen: SocketAddr,
    /// The address other processes dial to reach this one, when it is not
    /// the listen address (a wildcard listen address, NAT).
    #[arg(long)]
    advertise_address: Option<String>,
    /// Parallel units (actor slots per fragment) of this process.
    #[arg(long, default_value_t = 2)]
    parallel_units: u32,
    /// Object store for state files: the same as meta's.
    #[arg(long)]
    state_store: String,
    /// A file holding the secret every process of the cluster shares.
    #[arg(long)]
    cluster_secret_file: PathBuf,
}

// `Parser` too: with no subcommand, the defaults are parsed from an empty
// command line.
#[derive(clap::Parser, Clone)]
struct PlaygroundArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Number of in-process compute nodes.
    #[arg(long, default_value_t = 2)]
    compute_nodes: u32,
    /// Parallel units per compute node.
    #[arg(long, default_value_t = 2)]
    parallel_units: u32,
}

/// A failed start is one line on stderr (`Error: …`, the causes joined,
/// newlines of a service's answer folded) and exit status 1.
fn main() -> std::process::ExitCode {
    match main_inner() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let line = format!("{e:#}")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            eprintln!("Error: {line}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn main_inner() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Some(Command::Playground(a)) => runtime.block_on(run_playground(a)),
        // No subcommand: the playground with every default.
        None => runtime.block_on(run_playground(PlaygroundArgs::parse_from(["playground"]))),
        Some(Command::Meta(a)) => runtime.block_on(run_meta(a)),
        Some(Command::Compute(a)) => runtime.block_on(run_compute(a)),
    }
}

async fn run_playground(args: PlaygroundArgs) -> anyhow::Result<()> {
    serve(args.server, args.compute_nodes, args.parallel_units, None).await
}

async fn run_meta(args: MetaArgs) -> anyhow::Result<()> {
    let secret = ClusterSecret::from_file(&args.cluster_secret_file)?;
    let cluster = ClusterRpc {
        rpc_listen: args.rpc_listen,
        secret,
    };
    serve(args.server, 0, 1, Some(cluster)).await
}

/// Start the server (the playground, or a cluster's meta when `cluster`
/// is given) and its metrics, and serve until a signal.
async fn serve(
    args: ServerArgs,
    compute_nodes: u32,
    parallel_units: u32,
    cluster: Option<ClusterRpc>,
) -> anyhow::Result<()> {
    let handle = start(ServerConfig {
        listen: args.listen,
        data_dir: args.data_dir,
        state_store: args.state_store,
        meta_store: args.meta_store,
        gc_grace: std::time::Duration::from_millis(args.gc_grace_ms),
        gc_interval: std::time::Duration::from_millis(args.gc_interval_ms.max(10)),
        compute_nodes,
        parallel_units,
        barrier_interval_ms: args.barrier_interval_ms,
        cluster,
    })
    .await?;
    if let Some(rpc) = handle.rpc_addr {
        println!("ebbflow meta: compute processes register at {rpc}");
    }
    ebbflow::metrics::start(args.metrics_listen, handle.meta.clone()).await?;
    serve_until_signal(handle).await
}

async fn run_compute(args: ComputeArgs) -> anyhow::Result<()> {
    let secret = ClusterSecret::from_file(&args.cluster_secret_file)?;
    let handle = start_compute(ComputeConfig {
        meta: args.meta,
        rpc_listen: args.rpc_listen,
        advertise: args.advertise_address,
        parallel_units: args.parallel_units.max(1),
        state_store: args.state_store,
        secret,
    })
    .await?;
    println!("ebbflow compute process listening on {}", handle.address);
    tokio::select! {
        _ = shutdown_signal() => tracing::info!("shutting down"),
        _ = handle.removed() => {}
    }
    handle.shutdown();
    Ok(())
}

async fn serve_until_signal(handle: ebbflow::server::ServerHandle) -> anyhow::Result<()> {
    println!(
        "ebbflow is listening on {} — connect with: psql -h {} -p {} -d dev -U root",
        handle.addr,
        handle.addr.ip(),
        handle.addr.port()
    );
    shutdown_signal().await;
    tracing::info!("shutting down");
    handle.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
