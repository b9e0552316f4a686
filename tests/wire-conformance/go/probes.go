package main

// Error answers an agent gets: each decoded into the model upstream's client expects for that
// status.

import (
	"context"

	"github.com/go-openapi/strfmt"
	"github.com/openshift/assisted-service/client/installer"
	"github.com/openshift/assisted-service/models"
)

// unknownID names no host or cluster.
const unknownID = strfmt.UUID("00000000-0000-4000-8000-00000000dead")

func probes(s *scenario, f clusterFlags) error {
	// 404: instructions for a host that never registered.
	s.api.do("v2GetNextSteps", 404, func(ctx context.Context) (any, error) {
		return s.api.c.Installer.V2GetNextSteps(ctx, &installer.V2GetNextStepsParams{
			InfraEnvID: s.infraEnvID,
			HostID:     unknownID,
		})
	})
	// 404: progress of a host that never registered.
	s.api.do("v2UpdateHostInstallProgress", 404, func(ctx context.Context) (any, error) {
		return s.api.c.Installer.V2UpdateHostInstallProgress(ctx, &installer.V2UpdateHostInstallProgressParams{
			InfraEnvID:   s.infraEnvID,
			HostID:       unknownID,
			HostProgress: &models.HostProgress{CurrentStage: models.HostStageInstalling},
		})
	})
	// 403: a cluster the infra-env's token does not open.
	s.api.do("v2GetCluster", 403, func(ctx context.Context) (any, error) {
		return s.api.c.Installer.V2GetCluster(ctx, &installer.V2GetClusterParams{ClusterID: unknownID})
	})
	// 401: a token the service did not sign.
	bad, err := newAPI(f.url, "not-a-token", s.rec)
	if err != nil {
		return err
	}
	id := unknownID
	bad.do("v2RegisterHost", 401, func(ctx context.Context) (any, error) {
		return bad.c.Installer.V2RegisterHost(ctx, &installer.V2RegisterHostParams{
			InfraEnvID:    s.infraEnvID,
			NewHostParams: &models.HostCreateParams{HostID: &id},
		})
	})
	return nil
}
