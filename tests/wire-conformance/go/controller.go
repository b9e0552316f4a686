package main

// The assisted-installer-controller: once the control plane is up it reports the hosts'
// post-reboot stages, then finalizes the cluster (finalizing stages, ingress CA, operators,
// logs) until the service says the cluster is installed.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	"github.com/go-openapi/runtime"
	"github.com/go-openapi/strfmt"
	"github.com/openshift/assisted-service/client/installer"
	"github.com/openshift/assisted-service/client/operators"
	"github.com/openshift/assisted-service/models"
)

// finalizingStages are reported before "Done" (upstream's names).
var finalizingStages = []string{"Waiting for cluster operators", "Adding router ca"}

type controller struct {
	s         *scenario
	clusterID strfmt.UUID
	finalized bool
}

// run polls the cluster until it is installed (or adding hosts, which the kube-API flow turns an
// installed cluster into at once).
func (c *controller) run() error {
	last := ""
	for !c.s.expired() {
		cl := c.getCluster()
		if cl != nil && cl.Status != nil {
			if *cl.Status != last {
				last = *cl.Status
				logf("controller: cluster %s", last)
			}
			switch *cl.Status {
			case models.ClusterStatusInstalled, models.ClusterStatusAddingHosts:
				if !c.finalized {
					c.s.rec.note("cluster reached %s before the controller finalized it", *cl.Status)
				}
				c.complete()
				return nil
			case models.ClusterStatusError, models.ClusterStatusCancelled:
				return fmt.Errorf("cluster reached %s: %s", *cl.Status, deref(cl.StatusInfo))
			}
			sno := cl.HighAvailabilityMode != nil && *cl.HighAvailabilityMode == models.ClusterHighAvailabilityModeNone
			hosts := listHosts(c.s.api, c.clusterID)
			if hosts != nil && controlPlaneUp(hosts) {
				for _, h := range hosts {
					if stage, ok := nextControllerStage(h, sno); ok {
						c.reportHost(h, stage)
					}
				}
				if !c.finalized && allDone(hosts) {
					c.finalized = c.finalize()
					if c.finalized {
						logf("controller: finalized")
					}
				}
			}
		}
		time.Sleep(pollInterval)
	}
	return fmt.Errorf("cluster %s not installed in time", c.clusterID)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (c *controller) getCluster() *models.Cluster {
	var res *installer.V2GetClusterOK
	o := c.s.api.do("v2GetCluster", 200, func(ctx context.Context) (any, error) {
		var err error
		res, err = c.s.api.c.Installer.V2GetCluster(ctx, &installer.V2GetClusterParams{ClusterID: c.clusterID})
		return res, err
	})
	if !o.OK(200) || res == nil {
		return nil
	}
	return res.Payload
}

// controlPlaneUp: the new control plane serves the controller once the bootstrap host rebooted.
func controlPlaneUp(hosts models.HostList) bool {
	for _, h := range hosts {
		if h != nil && h.Bootstrap && !rebootedOrLater(h) {
			return false
		}
	}
	return true
}

// nextControllerStage is the stage the controller reports next for a rebooted host.
func nextControllerStage(h *models.Host, sno bool) (models.HostStage, bool) {
	if h == nil || h.Progress == nil || h.Status == nil || *h.Status != models.HostStatusInstallingInProgress {
		return "", false
	}
	list := []models.HostStage{models.HostStageConfiguring, models.HostStageJoined, models.HostStageDone}
	if sno {
		list = []models.HostStage{models.HostStageJoined, models.HostStageDone}
	}
	switch h.Progress.CurrentStage {
	case models.HostStageRebooting, models.HostStageWaitingForIgnition:
		return list[0], true
	}
	for i, s := range list[:len(list)-1] {
		if s == h.Progress.CurrentStage {
			return list[i+1], true
		}
	}
	return "", false
}

func allDone(hosts models.HostList) bool {
	done := 0
	for _, h := range hosts {
		if h == nil {
			continue
		}
		if (h.Progress != nil && h.Progress.CurrentStage == models.HostStageDone) ||
			(h.Status != nil && *h.Status == models.HostStatusInstalled) {
			done++
		}
	}
	return len(hosts) > 0 && done == len(hosts)
}

func (c *controller) reportHost(h *models.Host, stage models.HostStage) {
	params := &models.HostProgress{CurrentStage: stage}
	c.s.rec.checkRequest("v2UpdateHostInstallProgress", params)
	c.s.api.do("v2UpdateHostInstallProgress", 200, func(ctx context.Context) (any, error) {
		return c.s.api.c.Installer.V2UpdateHostInstallProgress(ctx, &installer.V2UpdateHostInstallProgressParams{
			InfraEnvID:   h.InfraEnvID,
			HostID:       *h.ID,
			HostProgress: params,
		})
	})
}

// finalize reports what the controller reports once every host is done; false to retry.
func (c *controller) finalize() bool {
	for _, stage := range finalizingStages {
		if !c.finalizingStage(stage) {
			return false
		}
	}
	cert, err := ingressCA()
	if err != nil {
		c.s.rec.fatal("cannot make the ingress CA: %v", err)
		return false
	}
	o := c.s.api.do("v2UploadClusterIngressCert", 201, func(ctx context.Context) (any, error) {
		return c.s.api.c.Installer.V2UploadClusterIngressCert(ctx, &installer.V2UploadClusterIngressCertParams{
			ClusterID:         c.clusterID,
			IngressCertParams: models.IngressCertParams(cert),
		})
	})
	if !o.OK(201) {
		return false
	}
	if !c.reportOperators() {
		return false
	}
	c.uploadControllerLogs()
	return c.finalizingStage("Done")
}

// finalizingStage: the pinned client and models predate PUT /v2/clusters/{id}/progress
// (upstream added it later), so its body is the plain JSON object upstream's swagger has.
func (c *controller) finalizingStage(stage string) bool {
	body := map[string]string{"finalizing_stage": stage}
	o := c.s.api.do("v2UpdateClusterFinalizingProgress", 204, func(ctx context.Context) (any, error) {
		return c.s.api.submit(ctx, "v2UpdateClusterFinalizingProgress", "PUT", "/v2/clusters/{cluster_id}/progress",
			map[string]string{"cluster_id": string(c.clusterID)}, body)
	})
	return o.OK(204)
}

func (c *controller) reportOperators() bool {
	var res *operators.V2ListOfClusterOperatorsOK
	o := c.s.api.do("v2ListOfClusterOperators", 200, func(ctx context.Context) (any, error) {
		var err error
		res, err = c.s.api.c.Operators.V2ListOfClusterOperators(ctx, &operators.V2ListOfClusterOperatorsParams{ClusterID: c.clusterID})
		return res, err
	})
	if !o.OK(200) || res == nil {
		return false
	}
	names := []string{}
	for _, op := range res.Payload {
		if op != nil && op.Name != "" {
			names = append(names, op.Name)
		}
	}
	if len(names) == 0 {
		c.s.rec.fail("v2ListOfClusterOperators 200", kindValidate, "", "no monitored operators (console is always monitored)")
	}
	for _, name := range names {
		report := &models.OperatorMonitorReport{
			Name:       name,
			Status:     models.OperatorStatusAvailable,
			StatusInfo: "All is well",
			Version:    "4.17.3",
		}
		c.s.rec.checkRequest("v2ReportMonitoredOperatorStatus", report)
		o := c.s.api.do("v2ReportMonitoredOperatorStatus", 200, func(ctx context.Context) (any, error) {
			return c.s.api.c.Operators.V2ReportMonitoredOperatorStatus(ctx, &operators.V2ReportMonitoredOperatorStatusParams{
				ClusterID:    c.clusterID,
				ReportParams: report,
			})
		})
		if !o.OK(200) {
			return false
		}
	}
	return true
}

func (c *controller) uploadControllerLogs() {
	c.s.api.do("v2UploadLogs", 204, func(ctx context.Context) (any, error) {
		return c.s.api.c.Installer.V2UploadLogs(ctx, &installer.V2UploadLogsParams{
			ClusterID: c.clusterID,
			LogsType:  string(models.LogsTypeController),
			Upfile:    runtime.NamedReader("controller_logs.tar.gz", bytes.NewReader(logsArchive("controller"))),
		})
	})
	state := models.LogsStateCompleted
	params := &models.LogsProgressParams{LogsState: &state}
	c.s.rec.checkRequest("v2UpdateClusterLogsProgress", params)
	c.s.api.do("v2UpdateClusterLogsProgress", 204, func(ctx context.Context) (any, error) {
		return c.s.api.c.Installer.V2UpdateClusterLogsProgress(ctx, &installer.V2UpdateClusterLogsProgressParams{
			ClusterID:          c.clusterID,
			LogsProgressParams: params,
		})
	})
}

// complete is the deprecated completion call older controllers make; the answer is a cluster.
func (c *controller) complete() {
	params := &models.CompletionParams{IsSuccess: ptr(true)}
	c.s.rec.checkRequest("v2CompleteInstallation", params)
	c.s.api.do("v2CompleteInstallation", 202, func(ctx context.Context) (any, error) {
		return c.s.api.c.Installer.V2CompleteInstallation(ctx, &installer.V2CompleteInstallationParams{
			ClusterID:        c.clusterID,
			CompletionParams: params,
		})
	})
}

// ingressCA is a self-signed CA in PEM, like the router CA the controller reads.
func ingressCA() (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ingress-operator@wire-conformance"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}
