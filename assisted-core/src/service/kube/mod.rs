//! The Kubernetes side of the core: controllers for InfraEnv, Agent, ClusterDeployment and
//! AgentClusterInstall, the persister that writes the store back to CR status, and the monitor.

pub mod status;
