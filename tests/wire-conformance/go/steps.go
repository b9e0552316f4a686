package main

// Step arguments decoded with upstream's request models, and step replies built from upstream's
// response models.

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/go-openapi/strfmt"
	"github.com/openshift/assisted-service/models"
)

// argModel returns a fresh upstream model for args[0] of a step type, or nil when the type
// takes no JSON document (inventory takes the host id, stop-installation nothing).
func argModel(t models.StepType) any {
	switch t {
	case models.StepTypeConnectivityCheck:
		return &models.ConnectivityCheckParams{}
	case models.StepTypeFreeNetworkAddresses:
		return &models.FreeAddressesRequest{}
	case models.StepTypeNtpSynchronizer:
		return &models.NtpSynchronizationRequest{}
	case models.StepTypeDomainResolution:
		return &models.DomainResolutionRequest{}
	case models.StepTypeVerifyVips:
		return &models.VerifyVipsRequest{}
	case models.StepTypeInstallationDiskSpeedCheck:
		return &models.DiskSpeedCheckRequest{}
	case models.StepTypeContainerImageAvailability:
		return &models.ContainerImageAvailabilityRequest{}
	case models.StepTypeInstall:
		return &models.InstallCmdRequest{}
	case models.StepTypeAPIVipConnectivityCheck:
		return &models.APIVipConnectivityRequest{}
	case models.StepTypeLogsGather:
		return &models.LogsGatherCmdRequest{}
	case models.StepTypeDhcpLeaseAllocate:
		return &models.DhcpAllocationRequest{}
	case models.StepTypeTangConnectivityCheck:
		return &models.TangConnectivityRequest{}
	case models.StepTypeUpgradeAgent:
		return &models.UpgradeAgentRequest{}
	case models.StepTypeDownloadBootArtifacts:
		return &models.DownloadBootArtifactsRequest{}
	case models.StepTypeRebootForReclaim:
		return &models.RebootForReclaimRequest{}
	case models.StepTypeNextStepRunner:
		return &models.NextStepCmdRequest{}
	}
	return nil
}

// decodeStep checks one instruction: its step_type is upstream's enum (the steps model's
// Validate already checked that) and its args decode into the type's request model. It returns
// the decoded request (nil when the type has none or it does not decode).
func (r *Recorder) decodeStep(s *models.Step, hostID strfmt.UUID) any {
	t := string(s.StepType)
	r.step(t)
	where := "step " + t + " args"
	switch s.StepType {
	case models.StepTypeInventory:
		// The inventory step is told which host it runs on.
		if len(s.Args) == 0 || !strfmt.IsUUID(s.Args[0]) {
			r.fail(where, kindValidate, "args.0", fmt.Sprintf("want the host id (a UUID), got %q", s.Args))
		} else if hostID != "" && s.Args[0] != string(hostID) {
			r.fail(where, kindValidate, "args.0", fmt.Sprintf("want host id %s, got %s", hostID, s.Args[0]))
		}
		return nil
	case models.StepTypeStopInstallation:
		return nil
	}
	target := argModel(s.StepType)
	if target == nil {
		r.fail(where, kindValidate, "step_type", "no upstream request model for step type "+t)
		return nil
	}
	if len(s.Args) == 0 {
		r.fail(where, kindValidate, "args", "want one JSON document, got no arguments")
		return nil
	}
	if !r.strictDecode(where, []byte(s.Args[0]), target) {
		return nil
	}
	return target
}

// world is what every simulated host knows: its peers and the cluster's VIPs.
type world struct {
	hosts      []*hostSpec
	apiVIP     string
	ingressVIP string
}

func (w *world) owner(ip string) *hostSpec {
	bare, _, _ := strings.Cut(ip, "/")
	for _, h := range w.hosts {
		if h.ip.String() == bare {
			return h
		}
	}
	return nil
}

// replyOutput builds the output document a healthy host on a healthy network sends for a step
// whose request decoded into req; nil means an empty output.
func (w *world) replyOutput(h *hostSpec, t models.StepType, req any) any {
	switch t {
	case models.StepTypeInventory:
		return h.inventory()
	case models.StepTypeConnectivityCheck:
		params, _ := req.(*models.ConnectivityCheckParams)
		return w.connectivity(h, params)
	case models.StepTypeFreeNetworkAddresses:
		nets, _ := req.(*models.FreeAddressesRequest)
		return w.freeAddresses(nets)
	case models.StepTypeNtpSynchronizer:
		source := "clock.example.com"
		if r, ok := req.(*models.NtpSynchronizationRequest); ok && r.NtpSource != nil && *r.NtpSource != "" {
			source, _, _ = strings.Cut(*r.NtpSource, ",")
		}
		return &models.NtpSynchronizationResponse{NtpSources: []*models.NtpSource{
			{SourceName: source, SourceState: models.SourceStateSynced},
		}}
	case models.StepTypeDomainResolution:
		r, _ := req.(*models.DomainResolutionRequest)
		return w.resolve(h, r)
	case models.StepTypeVerifyVips:
		resp := models.VerifyVipsResponse{}
		if r, ok := req.(*models.VerifyVipsRequest); ok {
			for _, v := range *r {
				resp = append(resp, &models.VerifiedVip{
					Vip:          v.Vip,
					VipType:      v.VipType,
					Verification: models.VipVerificationSucceeded.Pointer(),
				})
			}
		}
		return &resp
	case models.StepTypeInstallationDiskSpeedCheck:
		path := ""
		if r, ok := req.(*models.DiskSpeedCheckRequest); ok && r.Path != nil {
			path = *r.Path
		}
		return &models.DiskSpeedCheckResponse{IoSyncDuration: 5, Path: path}
	case models.StepTypeContainerImageAvailability:
		resp := &models.ContainerImageAvailabilityResponse{Images: []*models.ContainerImageAvailability{}}
		if r, ok := req.(*models.ContainerImageAvailabilityRequest); ok {
			for _, img := range r.Images {
				resp.Images = append(resp.Images, &models.ContainerImageAvailability{
					Name:         img,
					Result:       models.ContainerImageAvailabilityResultSuccess,
					SizeBytes:    4e8,
					Time:         8,
					DownloadRate: 50,
				})
			}
		}
		return resp
	case models.StepTypeAPIVipConnectivityCheck:
		url := ""
		if r, ok := req.(*models.APIVipConnectivityRequest); ok && r.URL != nil {
			url = *r.URL
		}
		return &models.APIVipConnectivityResponse{
			IsSuccess: true,
			URL:       url,
			Ignition:  `{"ignition":{"version":"3.2.0"}}`,
		}
	}
	return nil
}

func (w *world) connectivity(me *hostSpec, params *models.ConnectivityCheckParams) *models.ConnectivityReport {
	report := &models.ConnectivityReport{RemoteHosts: []*models.ConnectivityRemoteHost{}}
	if params == nil {
		return report
	}
	myNet := &net.IPNet{IP: me.ip.Mask(net.CIDRMask(me.prefix, 32)), Mask: net.CIDRMask(me.prefix, 32)}
	for _, remote := range *params {
		if remote == nil || remote.HostID == me.id {
			continue
		}
		rh := &models.ConnectivityRemoteHost{
			HostID:         remote.HostID,
			L2Connectivity: []*models.L2Connectivity{},
			L3Connectivity: []*models.L3Connectivity{},
		}
		for _, n := range remote.Nics {
			for _, addr := range n.IPAddresses {
				bare, _, _ := strings.Cut(addr, "/")
				ok := w.owner(bare) != nil
				rh.L3Connectivity = append(rh.L3Connectivity, &models.L3Connectivity{
					OutgoingNic:          nic,
					RemoteIPAddress:      bare,
					Successful:           ok,
					AverageRTTMs:         0.4,
					PacketLossPercentage: map[bool]float64{true: 0, false: 100}[ok],
				})
				if ip := net.ParseIP(bare); ip != nil && myNet.Contains(ip) {
					rh.L2Connectivity = append(rh.L2Connectivity, &models.L2Connectivity{
						OutgoingIPAddress: me.ip.String(),
						OutgoingNic:       nic,
						RemoteIPAddress:   bare,
						RemoteMac:         n.Mac.String(),
						Successful:        ok,
					})
				}
			}
		}
		report.RemoteHosts = append(report.RemoteHosts, rh)
	}
	return report
}

func (w *world) freeAddresses(nets *models.FreeAddressesRequest) *models.FreeNetworksAddresses {
	resp := models.FreeNetworksAddresses{}
	if nets == nil {
		return &resp
	}
	for _, n := range *nets {
		_, network, err := net.ParseCIDR(n)
		if err != nil {
			continue
		}
		free := []strfmt.IPv4{}
		for i := 2; i < 10; i++ {
			ip, err := nthAddress(network, i)
			if err == nil && w.owner(ip.String()) == nil {
				free = append(free, strfmt.IPv4(ip.String()))
			}
		}
		resp = append(resp, &models.FreeNetworkAddresses{Network: n, FreeAddresses: free})
	}
	return &resp
}

// resolve answers as the lab's DNS: api/api-int to the API VIP, *.apps to the ingress VIP (the
// host itself without VIPs), and nothing for the wildcard probe.
func (w *world) resolve(me *hostSpec, req *models.DomainResolutionRequest) *models.DomainResolutionResponse {
	resp := &models.DomainResolutionResponse{Resolutions: []*models.DomainResolutionResponseDomain{}}
	if req == nil {
		return resp
	}
	for _, d := range req.Domains {
		if d.DomainName == nil {
			continue
		}
		name := *d.DomainName
		addr := me.ip.String()
		switch {
		case strings.HasPrefix(name, "validateNoWildcardDNS."):
			addr = ""
		case (strings.HasPrefix(name, "api.") || strings.HasPrefix(name, "api-int.")) && w.apiVIP != "":
			addr = w.apiVIP
		case strings.Contains(name, ".apps.") && w.ingressVIP != "":
			addr = w.ingressVIP
		}
		v4 := []strfmt.IPv4{}
		if addr != "" {
			v4 = append(v4, strfmt.IPv4(addr))
		}
		resp.Resolutions = append(resp.Resolutions, &models.DomainResolutionResponseDomain{
			DomainName:    &name,
			IPV4Addresses: v4,
			IPV6Addresses: []strfmt.IPv6{},
		})
	}
	return resp
}

// stepReply wraps an output document into upstream's step-reply model.
func (r *Recorder) stepReply(s *models.Step, output any, exitCode int64, errMsg string) *models.StepReply {
	out := ""
	if output != nil {
		r.checkRequest("reply "+string(s.StepType)+" output", output)
		b, err := json.Marshal(output)
		if err != nil {
			r.fail("reply "+string(s.StepType)+" output", kindRequest, "", err.Error())
		}
		out = string(b)
	}
	return &models.StepReply{
		StepID:   s.StepID,
		StepType: s.StepType,
		ExitCode: exitCode,
		Output:   out,
		Error:    errMsg,
	}
}
