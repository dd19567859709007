//! Meta: the catalog, the cluster, the scheduler and the barrier manager.

pub mod catalog;
