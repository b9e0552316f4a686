//! The metrics every controller exports: reconciles, and failed reconciles by phase (the
//! variant of the controller's error enum), in the manager's shared registry.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::runtime::SharedRegistry;

type Labels = Vec<(String, String)>;

#[derive(Clone)]
pub struct ControllerMetrics {
    controller: String,
    reconciles: Family<Labels, Counter>,
    failures: Family<Labels, Counter>,
}

impl ControllerMetrics {
    /// Registers (once per registry) and returns the counters for `controller`.
    pub fn register(registry: &SharedRegistry, controller: &str) -> ControllerMetrics {
        let metrics = ControllerMetrics {
            controller: controller.to_string(),
            reconciles: Family::default(),
            failures: Family::default(),
        };
        if let Ok(mut registry) = registry.lock() {
            let sub = registry
                .sub_registry_with_label(("controller".into(), controller.to_string().into()));
            sub.register(
                "reconciles",
                "Reconciles started",
                metrics.reconciles.clone(),
            );
            sub.register(
                "reconcile_errors",
                "Reconciles that failed, by phase",
                metrics.failures.clone(),
            );
        }
        metrics
    }

    pub fn reconciled(&self) {
        self.reconciles.get_or_create(&Vec::new()).inc();
    }

    pub fn failed(&self, phase: &str) {
        self.failures
            .get_or_create(&vec![("phase".to_string(), phase.to_string())])
            .inc();
    }

    pub fn reconcile_count(&self) -> u64 {
        self.reconciles.get_or_create(&Vec::new()).get()
    }

    pub fn controller(&self) -> &str {
        &self.controller
    }
}
