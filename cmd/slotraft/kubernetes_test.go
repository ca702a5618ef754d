package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/slotraft/slotraft/cluster/server"
)

// The Kubernetes manifests (deploy/kubernetes: a kustomize base and its
// overlays) are rendered as `kubectl apply -k` renders them, every object
// is decoded strictly into the official k8s.io/api type (an unknown or
// misplaced field fails), and what docs/kubernetes.md promises is checked:
// the bootstrap, probes on /readyz and /healthz, the graceful leave, the
// non-root read-only container, the disruption budget, a bus open only to
// the pods, fully qualified advertised names, --dead-after beyond a volume
// reattach, and environment variables that are real server flags.

const kubeDir = "../../deploy/kubernetes"

// kubeObjects is one rendering, decoded.
type kubeObjects struct {
	statefulSet *appsv1.StatefulSet
	services    map[string]*corev1.Service
	pdb         *policyv1.PodDisruptionBudget
	netpol      *networkingv1.NetworkPolicy
}

func TestKubernetesManifests(t *testing.T) {
	for _, dir := range []string{"base", "overlays/dev", "overlays/production"} {
		t.Run(dir, func(t *testing.T) {
			objs := renderKube(t, kubeDir+"/"+dir)
			checkStatefulSet(t, objs)
			checkServices(t, objs)
			checkPolicies(t, objs)
			if dir == "overlays/production" {
				checkProduction(t, objs.statefulSet)
			}
		})
	}
}

// renderKube runs kustomize on dir and decodes each object strictly.
func renderKube(t *testing.T, dir string) *kubeObjects {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	objs := &kubeObjects{services: map[string]*corev1.Service{}}
	for _, r := range resMap.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		kind := r.GetKind()
		var into any
		switch kind {
		case "StatefulSet":
			objs.statefulSet = &appsv1.StatefulSet{}
			into = objs.statefulSet
		case "Service":
			svc := &corev1.Service{}
			objs.services[r.GetName()] = svc
			into = svc
		case "PodDisruptionBudget":
			objs.pdb = &policyv1.PodDisruptionBudget{}
			into = objs.pdb
		case "NetworkPolicy":
			objs.netpol = &networkingv1.NetworkPolicy{}
			into = objs.netpol
		default:
			t.Fatalf("%s: unexpected kind %s", dir, kind)
		}
		if err := decodeStrict(data, into); err != nil {
			t.Fatalf("%s %s/%s: %v\n%s", dir, kind, r.GetName(), err, data)
		}
	}
	if objs.statefulSet == nil || objs.pdb == nil || objs.netpol == nil || len(objs.services) != 2 {
		t.Fatalf("%s: want a StatefulSet, two Services, a PodDisruptionBudget and a NetworkPolicy", dir)
	}
	return objs
}

// decodeStrict decodes JSON refusing unknown fields and trailing data.
func decodeStrict(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the object")
	}
	return nil
}

func checkStatefulSet(t *testing.T, objs *kubeObjects) {
	ss := objs.statefulSet
	pod := ss.Spec.Template.Spec
	if ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: the first pods must start together for --bootstrap-expect", ss.Spec.PodManagementPolicy)
	}
	if !labels.SelectorFromSet(ss.Spec.Selector.MatchLabels).Matches(labels.Set(ss.Spec.Template.Labels)) {
		t.Errorf("selector %v does not select the pods %v", ss.Spec.Selector.MatchLabels, ss.Spec.Template.Labels)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	env := checkEnv(t, c.Env)
	leaveTimeout := server.ShutdownPlan{HandOff: true, Wait: 10 * time.Second}.LeaveTimeout() // shutdown-timeout's default
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second < leaveTimeout+15*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v: the leave may take %v, plus closing", pod.TerminationGracePeriodSeconds, leaveTimeout)
	}
	sc, psc := c.SecurityContext, pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.FSGroup == nil {
		t.Error("the pod must run as non-root with an fsGroup for its volume")
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext %+v: want a read-only root, no privilege escalation, every capability dropped", sc)
	}
	httpPort := addrPort(t, env["SLOTRAFT_HTTP"])
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		want := map[string]string{"readiness": "/readyz", "liveness": "/healthz", "startup": "/healthz"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || containerPort(c, p.HTTPGet.Port.String()) != httpPort {
			t.Errorf("%s probe %+v: want GET %s on the --http port %d", name, p, want, httpPort)
		}
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil ||
		strings.Join(c.Lifecycle.PreStop.Exec.Command, " ") != "/slotraft admin --timeout 25s leave" {
		t.Errorf("preStop %+v: want the graceful leave", c.Lifecycle)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit", c.Resources)
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 || !hasMount(c, ss.Spec.VolumeClaimTemplates[0].Name, env["SLOTRAFT_DATA_DIR"]) {
		t.Errorf("the data dir %q is not the volume claim's mount", env["SLOTRAFT_DATA_DIR"])
	}
}

// checkEnv: every SLOTRAFT_ variable is a server flag with a valid value,
// the addresses are fully qualified names, and --dead-after outlasts a
// volume reattach. It returns the variables.
func checkEnv(t *testing.T, vars []corev1.EnvVar) map[string]string {
	t.Helper()
	fs, _ := newServerFlagSet(io.Discard)
	env := map[string]string{}
	for _, v := range vars {
		env[v.Name] = v.Value
		if !strings.HasPrefix(v.Name, envPrefix) {
			continue
		}
		// $(POD_NAME) and the like are expanded by Kubernetes.
		value := strings.NewReplacer("$(POD_NAME)", "slotraft-0", "$(POD_NAMESPACE)", "default").Replace(v.Value)
		name := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(v.Name, envPrefix)), "_", "-")
		if fs.Lookup(name) == nil {
			t.Errorf("%s is not a server flag's variable", v.Name)
		} else if err := fs.Set(name, value); err != nil {
			t.Errorf("%s=%q: %v", v.Name, value, err)
		}
	}
	for _, name := range []string{"SLOTRAFT_ADVERTISE", "SLOTRAFT_BUS_ADVERTISE", "SLOTRAFT_JOIN"} {
		if !strings.Contains(env[name], ".svc.cluster.local:") {
			t.Errorf("%s=%q: want a fully qualified name, which clients in other namespaces resolve", name, env[name])
		}
	}
	if d, err := time.ParseDuration(env["SLOTRAFT_DEAD_AFTER"]); err != nil || d < 5*time.Minute {
		t.Errorf("SLOTRAFT_DEAD_AFTER=%q: want at least 5m, longer than a volume takes to reattach", env["SLOTRAFT_DEAD_AFTER"])
	}
	if env["SLOTRAFT_BOOTSTRAP_EXPECT"] == "" || env["SLOTRAFT_JOIN"] == "" || env["SLOTRAFT_BOOTSTRAP"] != "" {
		t.Error("want --bootstrap-expect with --join (no pod bootstraps alone)")
	}
	return env
}

func checkServices(t *testing.T, objs *kubeObjects) {
	headless := objs.services[objs.statefulSet.Spec.ServiceName]
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Fatalf("the StatefulSet's service %q must be headless and publish pods before they are ready", objs.statefulSet.Spec.ServiceName)
	}
	podLabels := labels.Set(objs.statefulSet.Spec.Template.Labels)
	for name, svc := range objs.services {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			t.Errorf("service %s selects %v, not the pods", name, svc.Spec.Selector)
		}
	}
}

func checkPolicies(t *testing.T, objs *kubeObjects) {
	podLabels := labels.Set(objs.statefulSet.Spec.Template.Labels)
	pdb := objs.pdb
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector == nil ||
		!labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Errorf("PodDisruptionBudget %+v: want maxUnavailable 1 over the pods", pdb.Spec)
	}
	np := objs.netpol.Spec
	if !labels.SelectorFromSet(np.PodSelector.MatchLabels).Matches(podLabels) {
		t.Errorf("NetworkPolicy applies to %v, not the pods", np.PodSelector.MatchLabels)
	}
	for _, rule := range np.Ingress {
		for _, p := range rule.Ports {
			if p.Port.IntValue() != 17001 {
				continue
			}
			if len(rule.From) != 1 || rule.From[0].PodSelector == nil || rule.From[0].NamespaceSelector != nil ||
				!labels.SelectorFromSet(rule.From[0].PodSelector.MatchLabels).Matches(podLabels) ||
				len(rule.From[0].PodSelector.MatchLabels) == 0 {
				t.Errorf("the bus port is open to %+v: want slotraft's pods only", rule.From)
			}
		}
	}
}

// checkProduction: the cluster secret and the config file come from
// mounted Secrets.
func checkProduction(t *testing.T, ss *appsv1.StatefulSet) {
	c := ss.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, v := range c.Env {
		env[v.Name] = v.Value
	}
	secrets := map[string]string{} // volume name -> secret
	for _, v := range ss.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	for _, name := range []string{"SLOTRAFT_CLUSTER_SECRET_FILE", "SLOTRAFT_CONFIG"} {
		found := false
		for _, m := range c.VolumeMounts {
			if secrets[m.Name] != "" && strings.HasPrefix(env[name], m.MountPath+"/") && m.ReadOnly {
				found = true
			}
		}
		if !found {
			t.Errorf("%s=%q is not in a read-only Secret mount", name, env[name])
		}
	}
	if *ss.Spec.Replicas < 5 || ss.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Error("production: want at least 5 pods, never two on one machine")
	}
}

// addrPort is the port of a host:port address.
func addrPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	p, err2 := strconv.ParseInt(port, 10, 32)
	if err != nil || err2 != nil {
		t.Fatalf("address %q: %v %v", addr, err, err2)
	}
	return int32(p)
}

func containerPort(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return -1
}

func hasMount(c corev1.Container, volume, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == volume && m.MountPath == path {
			return true
		}
	}
	return false
}
