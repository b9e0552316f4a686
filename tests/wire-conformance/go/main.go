// Command wire-conformance talks to an assisted-core agent API as the discovery agent, the
// assisted-installer and the assisted-installer-controller do, using assisted-service's published
// client and models (github.com/openshift/assisted-service/{client,models}). Every response is
// decoded into upstream's model, validated with the model's Validate and checked for keys the
// model does not declare; every request is built from the models. It prints a JSON summary and
// exits 0 when everything conformed, 1 when something did not, 2 when the scenario could not
// run to its end.
//
//	wire-conformance cluster -url URL -infra-env-id ID -token TOKEN [-masters 3] [-workers 0]
//	    [-day2 1] [-machine-cidr CIDR] [-api-vip IP] [-ingress-vip IP] [-timeout 3m] [-summary FILE]
//	wire-conformance steps -file STEPS.json [-summary FILE]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/openshift/assisted-service/models"
)

// started is when the program started; progress lines on stderr carry the time since.
var started = time.Now()

// logf prints a progress line on stderr (the Rust test shows it for failed runs).
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[%6.2fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, a...))
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wire-conformance cluster|steps [flags]")
		os.Exit(2)
	}
	var rec *Recorder
	var summaryPath string
	switch os.Args[1] {
	case "cluster":
		rec, summaryPath = clusterCmd(os.Args[2:])
	case "steps":
		rec, summaryPath = stepsCmd(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	s := rec.summary()
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if summaryPath == "" || summaryPath == "-" {
		fmt.Println(string(out))
	} else if err := os.WriteFile(summaryPath, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, f := range s.Failures {
		fmt.Fprintf(os.Stderr, "MISMATCH %s [%s] %s: %s (x%d)\n", f.Where, f.Kind, f.Field, f.Message, f.Count)
	}
	switch {
	case s.Fatal != "":
		fmt.Fprintln(os.Stderr, "FATAL:", s.Fatal)
		os.Exit(2)
	case len(s.Failures) > 0:
		os.Exit(1)
	}
}

func clusterCmd(args []string) (*Recorder, string) {
	fs := flag.NewFlagSet("cluster", flag.ExitOnError)
	serviceURL := fs.String("url", "", "service URL without the API path, e.g. http://127.0.0.1:8090")
	infraEnvID := fs.String("infra-env-id", "", "the infra-env the hosts boot from")
	token := fs.String("token", "", "the infra-env's agent token (X-Secret-Key)")
	masters := fs.Int("masters", 3, "control-plane hosts; 1 master and 0 workers is SNO")
	workers := fs.Int("workers", 0, "worker hosts")
	day2 := fs.Int("day2", 0, "day-2 workers added after the install; their install fails (error and logs path)")
	cidr := fs.String("machine-cidr", "192.168.111.0/24", "the machine network")
	apiVIP := fs.String("api-vip", "", "the API VIP (multi-node)")
	ingressVIP := fs.String("ingress-vip", "", "the ingress VIP (multi-node)")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up after this long")
	summary := fs.String("summary", "-", "where to write the JSON summary (- for stdout)")
	_ = fs.Parse(args)

	rec := newRecorder(fmt.Sprintf("cluster masters=%d workers=%d day2=%d", *masters, *workers, *day2))
	if err := runCluster(rec, clusterFlags{
		url: *serviceURL, infraEnvID: *infraEnvID, token: *token,
		masters: *masters, workers: *workers, day2: *day2,
		cidr: *cidr, apiVIP: *apiVIP, ingressVIP: *ingressVIP, timeout: *timeout,
	}); err != nil {
		rec.fatal("%v", err)
	}
	return rec, *summary
}

type clusterFlags struct {
	url, infraEnvID, token   string
	masters, workers, day2   int
	cidr, apiVIP, ingressVIP string
	timeout                  time.Duration
}

func runCluster(rec *Recorder, f clusterFlags) error {
	if f.url == "" || !strfmt.IsUUID(f.infraEnvID) || f.token == "" {
		return errors.New("-url, -infra-env-id (a UUID) and -token are required")
	}
	_, network, err := net.ParseCIDR(f.cidr)
	if err != nil {
		return err
	}
	api, err := newAPI(f.url, f.token, rec)
	if err != nil {
		return err
	}
	s := &scenario{
		api:        api,
		rec:        rec,
		infraEnvID: strfmt.UUID(f.infraEnvID),
		world:      &world{apiVIP: f.apiVIP, ingressVIP: f.ingressVIP},
		deadline:   time.Now().Add(f.timeout),
	}
	if err := probes(s, f); err != nil {
		return err
	}

	var day1, day2 []*hostSpec
	add := func(list *[]*hostSpec, k hostKind, n int) error {
		for i := 0; i < n; i++ {
			h, err := newHost(k, i, network)
			if err != nil {
				return err
			}
			*list = append(*list, h)
		}
		return nil
	}
	masterKind := kindMaster
	if f.masters == 1 && f.workers == 0 {
		masterKind = kindSNO
	}
	if err := errors.Join(add(&day1, masterKind, f.masters), add(&day1, kindWorker, f.workers), add(&day2, kindDay2, f.day2)); err != nil {
		return err
	}
	for _, h := range day2 {
		h.failInstall = true
	}
	s.world.hosts = append(append([]*hostSpec{}, day1...), day2...)

	// Day 1: the hosts install the cluster; the controller finishes it.
	errs := runAgents(s, day1, func() error {
		for s.cluster() == "" && !s.expired() {
			time.Sleep(pollInterval)
		}
		if s.cluster() == "" {
			return errors.New("no registration response named the cluster")
		}
		return (&controller{s: s, clusterID: s.cluster()}).run()
	})
	if errs != nil {
		return errs
	}
	logf("day 1 done: cluster %s installed", s.cluster())
	// Day 2: added hosts fail their install, then send logs when asked.
	if len(day2) > 0 {
		if err := runAgents(s, day2, nil); err != nil {
			return err
		}
		if !s.sawLogsAndStop(day2) {
			return errors.New("a failed day-2 host never got logs-gather and stop-installation")
		}
		logf("day 2 done: the failed hosts sent their logs")
	}
	return nil
}

// runAgents runs one agent per host (and extra, when given) until all have finished.
func runAgents(s *scenario, hosts []*hostSpec, extra func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(hosts)+1)
	s.agents = map[strfmt.UUID]*agent{}
	for i, h := range hosts {
		a := &agent{s: s, h: h, rebooted: make(chan struct{})}
		s.agents[h.id] = a
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = a.run()
		}()
	}
	if extra != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[len(hosts)] = extra()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *scenario) sawLogsAndStop(hosts []*hostSpec) bool {
	for _, h := range hosts {
		if a := s.agents[h.id]; a == nil || !a.logsSent || !a.stopped {
			return false
		}
	}
	return true
}

// stepsCmd decodes a file of `steps` documents (as GET .../instructions answers them) and every
// instruction's arguments with upstream's models: for step types a scenario cannot reach.
func stepsCmd(args []string) (*Recorder, string) {
	fs := flag.NewFlagSet("steps", flag.ExitOnError)
	file := fs.String("file", "", "a JSON array of steps documents")
	summary := fs.String("summary", "-", "where to write the JSON summary (- for stdout)")
	_ = fs.Parse(args)
	rec := newRecorder("steps " + *file)
	raw, err := os.ReadFile(*file)
	if err != nil {
		rec.fatal("%v", err)
		return rec, *summary
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(raw, &docs); err != nil {
		rec.fatal("%s is not a JSON array: %v", *file, err)
		return rec, *summary
	}
	for _, doc := range docs {
		var steps models.Steps
		if !rec.strictDecode("steps document", doc, &steps) {
			continue
		}
		for _, st := range steps.Instructions {
			if st != nil {
				rec.decodeStep(st, "")
			}
		}
	}
	return rec, *summary
}
