//! The three Nexmark streams of `tests/nexmark.rs`: their sources in
//! ebbflow, their tables in PostgreSQL, and how many rows each must have.

/// Event 0's time: 2023-11-14 22:13:27 UTC (ms). Events are 100 µs apart
/// (see `tests/nexmark.rs`); the odd second puts a 10-second window boundary
/// (22:13:30) inside the first 5 s, so even `NEXMARK_EVENTS=50000` has
/// two tumbling windows.
pub(super) const BASE_TIME_MS: u64 = 1_700_000_007_000;

/// A Nexmark stream: source name, `nexmark.table.type`, and its columns
/// with RisingWave's names and types (the connector's `fields()`), which
/// are also PostgreSQL's.
pub(super) struct Stream {
    pub(super) name: &'static str,
    pub(super) table_type: &'static str,
    pub(super) columns: &'static [(&'static str, &'static str)],
}

pub(super) const STREAMS: [Stream; 3] = [
    Stream {
        name: "person",
        table_type: "Person",
        columns: &[
            ("id", "BIGINT"),
            ("name", "VARCHAR"),
            ("email_address", "VARCHAR"),
            ("credit_card", "VARCHAR"),
            ("city", "VARCHAR"),
            ("state", "VARCHAR"),
            ("date_time", "TIMESTAMP"),
            ("extra", "VARCHAR"),
        ],
    },
    Stream {
        name: "auction",
        table_type: "Auction",
        columns: &[
            ("id", "BIGINT"),
            ("item_name", "VARCHAR"),
            ("description", "VARCHAR"),
            ("initial_bid", "BIGINT"),
            ("reserve", "BIGINT"),
            ("date_time", "TIMESTAMP"),
            ("expires", "TIMESTAMP"),
            ("seller", "BIGINT"),
            ("category", "BIGINT"),
            ("extra", "VARCHAR"),
        ],
    },
    Stream {
        name: "bid",
        table_type: "Bid",
        columns: &[
            ("auction", "BIGINT"),
            ("bidder", "BIGINT"),
            ("price", "BIGINT"),
            ("channel", "VARCHAR"),
            ("url", "VARCHAR"),
            ("date_time", "TIMESTAMP"),
            ("extra", "VARCHAR"),
        ],
    },
];

impl Stream {
    pub(super) fn column_list(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|c| c.0).collect();
        names.join(", ")
    }

    pub(super) fn column_defs(&self) -> String {
        let defs: Vec<String> = self
            .columns
            .iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect();
        defs.join(", ")
    }

    /// `CREATE SOURCE` of the stream: `events` events of the whole
    /// stream, at least `gap_ns` apart in wall-clock time (0: as fast as
    /// the jobs take them).
    pub(super) fn create_source(&self, events: u64, gap_ns: u64) -> String {
        format!(
            "CREATE SOURCE {} ({}) WITH (connector = 'nexmark', \
             nexmark.table.type = '{}', nexmark.event.num = '{events}', \
             nexmark.split.num = '8', nexmark.min.event.gap.in.ns = '{gap_ns}', \
             nexmark.base.time = '{BASE_TIME_MS}')",
            self.name,
            self.column_defs(),
            self.table_type
        )
    }

    /// How many of the first `events` events are of this stream: event
    /// `n` is a person if `n % 50 == 0`, an auction if `n % 50` is 1..=3,
    /// a bid otherwise.
    pub(super) fn expected_rows(&self, events: u64) -> u64 {
        let full = events / 50;
        let rest = events % 50;
        match self.name {
            "person" => full + rest.min(1),
            "auction" => 3 * full + rest.saturating_sub(1).min(3),
            _ => 46 * full + rest.saturating_sub(4),
        }
    }
}
