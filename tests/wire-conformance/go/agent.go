package main

// The discovery agent (register, poll instructions, answer them) and the installer it starts on
// the install step, all through upstream's generated client.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-openapi/runtime"
	"github.com/go-openapi/strfmt"
	"github.com/openshift/assisted-service/client/installer"
	"github.com/openshift/assisted-service/models"
)

const agentVersion = "quay.io/edge-infrastructure/assisted-installer-agent:latest"

// pollInterval replaces the server's next_instruction_seconds: the scenario runs at full speed.
const pollInterval = 100 * time.Millisecond

// scenario is one run: the hosts, the API and what they found out.
type scenario struct {
	api        *API
	rec        *Recorder
	infraEnvID strfmt.UUID
	world      *world
	deadline   time.Time

	// agents of the hosts running now, by host id.
	agents map[strfmt.UUID]*agent

	mu        sync.Mutex
	clusterID strfmt.UUID
}

func (s *scenario) setCluster(id *strfmt.UUID) {
	if id == nil || *id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusterID = *id
}

func (s *scenario) cluster() strfmt.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clusterID
}

func (s *scenario) expired() bool { return time.Now().After(s.deadline) }

// agent is one host's agent process.
type agent struct {
	s *scenario
	h *hostSpec
	// rebooted is closed when the installer finished ("Rebooting" reported).
	rebooted chan struct{}
	// installing is set once the installer runs; a repeated install step starts no other.
	installing bool
	// logsSent and stopped record the error path of a failed install.
	logsSent, stopped bool
}

// run is the agent's life: register, then poll and answer until the host reboots (or, for a
// host whose install fails, until it has sent its logs and was told to stop).
func (a *agent) run() error {
	for !a.s.expired() {
		if err := a.register(); err != nil {
			return err
		}
		restart, err := a.pollLoop()
		if err != nil || !restart {
			return err
		}
	}
	return fmt.Errorf("host %s: timed out", a.h.hostname)
}

func (a *agent) register() error {
	for !a.s.expired() {
		var res *installer.V2RegisterHostCreated
		id := a.h.id
		params := &models.HostCreateParams{HostID: &id, DiscoveryAgentVersion: agentVersion}
		a.s.rec.checkRequest("v2RegisterHost", params)
		// 409: the cluster cannot take hosts right now (e.g. installed, not yet open for day 2);
		// the agent keeps trying, as upstream's does.
		o := a.s.api.doTolerating("v2RegisterHost", 201, []int{409}, func(ctx context.Context) (any, error) {
			var err error
			res, err = a.s.api.c.Installer.V2RegisterHost(ctx, &installer.V2RegisterHostParams{
				InfraEnvID:            a.s.infraEnvID,
				NewHostParams:         params,
				DiscoveryAgentVersion: ptr(agentVersion),
			})
			return res, err
		})
		if o.OK(201) && res != nil && res.Payload != nil {
			logf("%s: registered (%s)", a.h.hostname, deref(res.Payload.Status))
			a.s.setCluster(res.Payload.ClusterID)
			a.checkRunnerCommand(res.Payload)
			return nil
		}
		// Fast-forwarded: the real agent waits longer between tries.
		time.Sleep(3 * pollInterval)
	}
	return fmt.Errorf("host %s: registration never accepted", a.h.hostname)
}

// checkRunnerCommand decodes the next-step runner's argument with upstream's model.
func (a *agent) checkRunnerCommand(p *models.HostRegistrationResponse) {
	where := "v2RegisterHost 201 next_step_runner_command.args"
	cmd := p.NextStepRunnerCommand
	if cmd == nil || len(cmd.Args) == 0 {
		a.s.rec.fail(where, kindValidate, "next_step_runner_command", "no runner arguments")
		return
	}
	var req models.NextStepCmdRequest
	if a.s.rec.strictDecode(where, []byte(cmd.Args[0]), &req) && req.HostID != nil && *req.HostID != a.h.id {
		a.s.rec.fail(where, kindValidate, "host_id", fmt.Sprintf("runner command for host %s, want %s", *req.HostID, a.h.id))
	}
}

// pollLoop answers instructions; true means "register again" (post_step_action exit).
func (a *agent) pollLoop() (bool, error) {
	for !a.s.expired() {
		select {
		case <-a.rebooted:
			return false, nil
		default:
		}
		if a.logsSent && a.stopped {
			return false, nil
		}
		steps, status := a.nextSteps()
		if status == 404 {
			return true, nil
		}
		if steps != nil {
			for _, step := range steps.Instructions {
				if step != nil {
					a.answer(step)
				}
			}
			if steps.PostStepAction != nil && *steps.PostStepAction == models.StepsPostStepActionExit {
				return true, nil
			}
		}
		time.Sleep(pollInterval)
	}
	return false, fmt.Errorf("host %s: timed out", a.h.hostname)
}

func (a *agent) nextSteps() (*models.Steps, int) {
	var res *installer.V2GetNextStepsOK
	now := time.Now().Unix()
	o := a.s.api.do("v2GetNextSteps", 200, func(ctx context.Context) (any, error) {
		var err error
		res, err = a.s.api.c.Installer.V2GetNextSteps(ctx, &installer.V2GetNextStepsParams{
			InfraEnvID:            a.s.infraEnvID,
			HostID:                a.h.id,
			Timestamp:             &now,
			DiscoveryAgentVersion: ptr(agentVersion),
		})
		return res, err
	})
	if !o.OK(200) || res == nil {
		return nil, o.Status
	}
	return res.Payload, o.Status
}

// answer runs one instruction the way the agent would and posts its reply.
func (a *agent) answer(step *models.Step) {
	req := a.s.rec.decodeStep(step, a.h.id)
	var output any
	switch step.StepType {
	case models.StepTypeInstall:
		if r, ok := req.(*models.InstallCmdRequest); ok && !a.installing {
			logf("%s: install step, role %s", a.h.hostname, deref((*string)(r.Role)))
			a.installing = true
			go a.install(r)
		}
	case models.StepTypeLogsGather:
		if r, ok := req.(*models.LogsGatherCmdRequest); ok {
			a.sendLogs(r)
			logf("%s: logs sent", a.h.hostname)
		}
	case models.StepTypeStopInstallation:
		a.stopped = true
	case models.StepTypeExecute, models.StepTypeNextStepRunner:
		// Not something an agent in the field is asked to run.
		a.post(a.s.rec.stepReply(step, nil, 1, "unsupported step type"))
		return
	default:
		output = a.s.world.replyOutput(a.h, step.StepType, req)
	}
	a.post(a.s.rec.stepReply(step, output, 0, ""))
}

func (a *agent) post(reply *models.StepReply) {
	a.s.rec.checkRequest("v2PostStepReply", reply)
	o := a.s.api.do("v2PostStepReply", 204, func(ctx context.Context) (any, error) {
		return a.s.api.c.Installer.V2PostStepReply(ctx, &installer.V2PostStepReplyParams{
			InfraEnvID:            a.s.infraEnvID,
			HostID:                a.h.id,
			Reply:                 reply,
			DiscoveryAgentVersion: ptr(agentVersion),
		})
	})
	if o.OK(204) {
		a.s.rec.reply(string(reply.StepType))
	}
}

// logsArchive is a small, fixed gzip stream; the Rust test finds it on the server's disk.
func logsArchive(what string) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	fmt.Fprintf(z, "wire-conformance %s logs\n", what)
	z.Close()
	return b.Bytes()
}

// sendLogs is the logs-gather step: progress, upload, progress.
func (a *agent) sendLogs(r *models.LogsGatherCmdRequest) {
	a.logsProgress(models.LogsStateCollecting)
	clusterID := a.s.cluster()
	if r.ClusterID != nil {
		clusterID = *r.ClusterID
	}
	infraEnv := a.s.infraEnvID
	hostID := a.h.id
	a.s.api.do("v2UploadLogs", 204, func(ctx context.Context) (any, error) {
		return a.s.api.c.Installer.V2UploadLogs(ctx, &installer.V2UploadLogsParams{
			ClusterID:  clusterID,
			InfraEnvID: &infraEnv,
			HostID:     &hostID,
			LogsType:   string(models.LogsTypeHost),
			Upfile:     runtime.NamedReader("logs.tar.gz", bytes.NewReader(logsArchive("host"))),
		})
	})
	a.logsProgress(models.LogsStateCompleted)
	a.logsSent = true
}

func (a *agent) logsProgress(state models.LogsState) {
	params := &models.LogsProgressParams{LogsState: &state}
	a.s.rec.checkRequest("v2UpdateHostLogsProgress", params)
	a.s.api.do("v2UpdateHostLogsProgress", 204, func(ctx context.Context) (any, error) {
		return a.s.api.c.Installer.V2UpdateHostLogsProgress(ctx, &installer.V2UpdateHostLogsProgressParams{
			InfraEnvID:         a.s.infraEnvID,
			HostID:             a.h.id,
			LogsProgressParams: params,
		})
	})
}

// ---- installer ----------------------------------------------------------------------------

// installerStages is what the installer on the host reports, ending with "Rebooting".
func installerStages(role models.HostRole, sno bool) []models.HostStage {
	switch {
	case sno:
		return []models.HostStage{models.HostStageStartingInstallation, models.HostStageInstalling,
			models.HostStageWaitingForBootkube, models.HostStageWritingImageToDisk, models.HostStageRebooting}
	case role == models.HostRoleBootstrap:
		return []models.HostStage{models.HostStageStartingInstallation, models.HostStageInstalling,
			models.HostStageWritingImageToDisk, models.HostStageWaitingForControlPlane,
			models.HostStageWaitingForBootkube, models.HostStageWaitingForController, models.HostStageRebooting}
	case role == models.HostRoleWorker:
		return []models.HostStage{models.HostStageStartingInstallation, models.HostStageInstalling,
			models.HostStageWritingImageToDisk, models.HostStageWaitingForControlPlane, models.HostStageRebooting}
	default:
		return []models.HostStage{models.HostStageStartingInstallation, models.HostStageInstalling,
			models.HostStageWritingImageToDisk, models.HostStageRebooting}
	}
}

// install is the assisted-installer on the host.
func (a *agent) install(req *models.InstallCmdRequest) {
	role := models.HostRoleMaster
	if req.Role != nil {
		role = *req.Role
	}
	sno := req.HighAvailabilityMode != nil && *req.HighAvailabilityMode == models.ClusterHighAvailabilityModeNone
	clusterID := a.s.cluster()
	if req.ClusterID != nil {
		clusterID = *req.ClusterID
	}
	stages := installerStages(role, sno)
	if a.h.failInstall {
		stages = []models.HostStage{models.HostStageStartingInstallation, models.HostStageInstalling, models.HostStageFailed}
	}
	for _, stage := range stages {
		switch stage {
		case models.HostStageInstalling:
			a.downloadIgnition(clusterID, role)
		case models.HostStageWaitingForBootkube:
			// The bootstrap installer talks to the new API with the no-ingress kubeconfig.
			a.downloadCredentials(clusterID, "kubeconfig-noingress")
		}
		info := ""
		if stage == models.HostStageFailed {
			info = "wire-conformance: simulated installation failure"
		}
		if !a.progress(stage, info) {
			return
		}
		if stage == models.HostStageWaitingForControlPlane && role == models.HostRoleBootstrap {
			a.waitForMasters(clusterID)
		}
	}
	logf("%s: installer reported %s", a.h.hostname, stages[len(stages)-1])
	if !a.h.failInstall {
		close(a.rebooted)
	}
}

func (a *agent) progress(stage models.HostStage, info string) bool {
	params := &models.HostProgress{CurrentStage: stage, ProgressInfo: info}
	a.s.rec.checkRequest("v2UpdateHostInstallProgress", params)
	for !a.s.expired() {
		o := a.s.api.do("v2UpdateHostInstallProgress", 200, func(ctx context.Context) (any, error) {
			return a.s.api.c.Installer.V2UpdateHostInstallProgress(ctx, &installer.V2UpdateHostInstallProgressParams{
				InfraEnvID:            a.s.infraEnvID,
				HostID:                a.h.id,
				HostProgress:          params,
				DiscoveryAgentVersion: ptr(agentVersion),
			})
		})
		if o.Status != 0 {
			return o.OK(200)
		}
		time.Sleep(pollInterval)
	}
	return false
}

func (a *agent) downloadIgnition(clusterID strfmt.UUID, role models.HostRole) {
	var buf bytes.Buffer
	a.s.api.do("v2DownloadHostIgnition", 200, func(ctx context.Context) (any, error) {
		return a.s.api.c.Installer.V2DownloadHostIgnition(ctx, &installer.V2DownloadHostIgnitionParams{
			InfraEnvID: a.s.infraEnvID,
			HostID:     a.h.id,
		}, &buf)
	})
	a.checkIgnition("v2DownloadHostIgnition", buf.Bytes())
	// The installer of older releases fetched the same file by name from the cluster's files.
	name := fmt.Sprintf("%s-%s.ign", role, a.h.id)
	if role == models.HostRoleBootstrap {
		name = "bootstrap.ign"
	}
	buf.Reset()
	a.s.api.do("V2DownloadClusterFiles", 200, func(ctx context.Context) (any, error) {
		return a.s.api.c.Installer.V2DownloadClusterFiles(ctx, &installer.V2DownloadClusterFilesParams{
			ClusterID:             clusterID,
			FileName:              name,
			DiscoveryAgentVersion: ptr(agentVersion),
		}, &buf)
	})
	a.checkIgnition("V2DownloadClusterFiles", buf.Bytes())
}

// checkIgnition: the downloaded file is an Ignition config (a JSON object with "ignition").
func (a *agent) checkIgnition(op string, b []byte) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil || doc["ignition"] == nil {
		a.s.rec.fail(op+" 200", kindDecode, "", "not an Ignition config: "+excerpt(b))
	}
}

func (a *agent) downloadCredentials(clusterID strfmt.UUID, name string) {
	a.s.api.do("V2DownloadClusterCredentials", 200, func(ctx context.Context) (any, error) {
		return a.s.api.c.Installer.V2DownloadClusterCredentials(ctx, &installer.V2DownloadClusterCredentialsParams{
			ClusterID: clusterID,
			FileName:  name,
		}, io.Discard)
	})
}

// waitForMasters: the bootstrap host holds until every other master has rebooted.
func (a *agent) waitForMasters(clusterID strfmt.UUID) {
	for !a.s.expired() {
		hosts := listHosts(a.s.api, clusterID)
		ready := hosts != nil
		for _, h := range hosts {
			if h == nil || h.ID == nil || *h.ID == a.h.id || h.Bootstrap || h.Role != models.HostRoleMaster {
				continue
			}
			if !rebootedOrLater(h) {
				ready = false
			}
		}
		if ready {
			return
		}
		time.Sleep(pollInterval)
	}
}

func listHosts(api *API, clusterID strfmt.UUID) models.HostList {
	var res *installer.ListClusterHostsOK
	o := api.do("ListClusterHosts", 200, func(ctx context.Context) (any, error) {
		var err error
		res, err = api.c.Installer.ListClusterHosts(ctx, &installer.ListClusterHostsParams{ClusterID: clusterID})
		return res, err
	})
	if !o.OK(200) || res == nil {
		return nil
	}
	return res.Payload
}

func rebootedOrLater(h *models.Host) bool {
	if h.Status != nil && *h.Status == models.HostStatusInstalled {
		return true
	}
	if h.Progress == nil {
		return false
	}
	switch h.Progress.CurrentStage {
	case models.HostStageRebooting, models.HostStageWaitingForIgnition, models.HostStageConfiguring,
		models.HostStageJoined, models.HostStageDone:
		return true
	}
	return false
}

func ptr[T any](v T) *T { return &v }
