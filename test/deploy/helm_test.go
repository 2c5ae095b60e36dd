package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/driver"
	_ "github.com/polyccm/polyccm/drivers/all" // every driver, for config.Load and their secret fields
	"github.com/polyccm/polyccm/test/cluster"
	"github.com/polyccm/polyccm/test/harness"
)

// The chart and where its pods find the config and the Secret's files.
const (
	chartPath       = "packaging/helm/polyccm"
	chartConfigPath = "/etc/polyccm/ccm.yaml"
	chartSecretsDir = "/etc/polyccm/secrets"
	chartImage      = "ghcr.io/polyccm/polyccm"
	// The release and namespace that give the names of rbac.yaml.
	chartRelease   = "polyccm"
	chartNamespace = "kube-system"
)

// chartDrivers are the drivers the chart serves: the registry's.
var chartDrivers = driver.Default().Names()

// regexpSemverTag is a release tag: vMAJOR.MINOR.PATCH.
var regexpSemverTag = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

func chartDir() string { return filepath.Join(harness.RepoRoot(), chartPath) }

// runHelm runs the helm of test/tools/build.sh, with its cache and config
// under the package's work directory, not $HOME. The error carries stderr.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := cluster.HelmForTest(t)
	home := filepath.Join(workDir, "helm-home")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// chartCase is a set of values, as helm flags (-f FILE, --set K=V).
type chartCase struct {
	name   string
	driver string
	flags  []string
}

func exampleValues(driver string) string {
	return filepath.Join(chartDir(), "examples", driver+".yaml")
}

// chartCases: the defaults, each driver with the default credential keys,
// each example values file, and the other shapes of the workload.
func chartCases() []chartCase {
	cases := []chartCase{{name: "defaults", driver: "digitalocean"}}
	for _, d := range chartDrivers {
		cases = append(cases,
			chartCase{name: "driver=" + d, driver: d, flags: []string{"--set", "driver=" + d + driverSettings[d]}},
			chartCase{name: "examples/" + d, driver: d, flags: []string{"-f", exampleValues(d)}})
	}
	return append(cases,
		chartCase{name: "DaemonSet", driver: "digitalocean", flags: []string{"--set", "kind=DaemonSet"}},
		chartCase{name: "one replica", driver: "digitalocean", flags: []string{"--set", "replicas=1"}},
		chartCase{name: "optional controllers", driver: "gce", flags: []string{"--set", "driver=gce,config.controllers.kubeletServingCSR=true,config.controllers.volumeLabels=true"}},
		chartCase{name: "no host network", driver: "aws", flags: []string{"--set", "driver=aws,hostNetwork=false,credentials.existingSecret="}},
		chartCase{name: "metrics", driver: "digitalocean", flags: []string{"--set", "serviceMonitor.enabled=true"}},
	)
}

// object is one document of a rendered manifest.
type object struct {
	Kind, Name, Namespace string
	doc                   []byte
}

func (o object) String() string {
	if o.Namespace != "" {
		return o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	return o.Kind + "/" + o.Name
}

// into strictly decodes the object: a field the Go type lacks fails.
func (o object) into(t *testing.T, out any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.doc, out); err != nil {
		t.Fatalf("%s: %v", o, err)
	}
}

// splitObjects splits a multi-document manifest into its objects.
func splitObjects(t *testing.T, manifest []byte) []object {
	t.Helper()
	var out []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if meta.Kind == "" {
			continue // comments only
		}
		out = append(out, object{Kind: meta.Kind, Name: meta.Name, Namespace: meta.Namespace, doc: doc})
	}
}

// rendered is `helm template`'s output.
type rendered struct {
	text    string
	objects []object
}

func (r rendered) ofKind(kind string) []object {
	var out []object
	for _, o := range r.objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the only object of kind, failing if there is not exactly one.
func (r rendered) one(t *testing.T, kind string) object {
	t.Helper()
	objs := r.ofKind(kind)
	if len(objs) != 1 {
		t.Fatalf("%d objects of kind %s rendered, want 1", len(objs), kind)
	}
	return objs[0]
}

// renderChart runs helm template for release in namespace, failing t if it
// fails.
func renderChart(t *testing.T, release, namespace string, flags ...string) rendered {
	t.Helper()
	out, err := templateChart(t, release, namespace, flags...)
	if err != nil {
		t.Fatal(err)
	}
	return rendered{text: out, objects: splitObjects(t, []byte(out))}
}

func templateChart(t *testing.T, release, namespace string, flags ...string) (string, error) {
	t.Helper()
	args := append([]string{"template", release, chartDir(), "--namespace", namespace}, flags...)
	return runHelm(t, args...)
}

// chartMeta is Chart.yaml.
func chartMeta(t *testing.T) (version, appVersion string) {
	t.Helper()
	var c struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(repoFile(t, chartPath+"/Chart.yaml"), &c); err != nil {
		t.Fatal(err)
	}
	return c.Version, c.AppVersion
}

func TestHelmChartMetadata(t *testing.T) {
	version, appVersion := chartMeta(t)
	// Helm wants SemVer 2 chart versions, without polyccm's "v".
	if !regexpSemverTag.MatchString("v" + version) {
		t.Errorf("Chart.yaml version %q is not MAJOR.MINOR.PATCH", version)
	}
	// The image is tagged as polyccm's releases are: vMAJOR.MINOR.PATCH.
	if !regexpSemverTag.MatchString(appVersion) {
		t.Errorf("Chart.yaml appVersion %q is not a release tag like v0.1.0", appVersion)
	}
}

// `helm lint --strict` passes the defaults and each driver's values, and
// fails on values the schema refuses (so a pass means something).
func TestHelmLint(t *testing.T) {
	for _, c := range chartCases() {
		t.Run(c.name, func(t *testing.T) {
			out, err := runHelm(t, append([]string{"lint", "--strict", chartDir()}, c.flags...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "0 chart(s) failed") || strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERROR]") {
				t.Errorf("helm lint --strict:\n%s", out)
			}
		})
	}
	t.Run("broken", func(t *testing.T) {
		out, err := runHelm(t, "lint", "--strict", chartDir(), "--set-string", "replicas=two")
		if err == nil {
			t.Fatalf("helm lint --strict passed replicas: \"two\":\n%s", out)
		}
		if !strings.Contains(out+err.Error(), "replicas") {
			t.Errorf("the lint failure does not name replicas:\n%s\n%v", out, err)
		}
	})
}

// Each case renders a workload that runs polyccm with the chart's config, as
// the ServiceAccount the chart's RBAC binds, with the tolerations, security
// and probes a CCM needs, and a config polyccm's own loader accepts.
func TestHelmTemplate(t *testing.T) {
	_, appVersion := chartMeta(t)
	for _, c := range chartCases() {
		t.Run(c.name, func(t *testing.T) {
			r := renderChart(t, chartRelease, chartNamespace, c.flags...)
			v := chartValues(t, c.flags)
			checkRendered(t, r, c.driver, v)
			if c.name == "defaults" {
				pod, _, _ := workload(t, r)
				if got, want := pod.Spec.Containers[0].Image, chartImage+":"+appVersion; got != want {
					t.Errorf("default image %s, want %s", got, want)
				}
			}
		})
	}
}

// caseValues are the values checkRendered compares the output with, read
// from a case's flags over the chart's defaults (only the flags chartCases
// uses: -f FILE and --set K=V,...).
type caseValues struct {
	existingSecret string
	hostNetwork    bool
}

func chartValues(t *testing.T, flags []string) caseValues {
	t.Helper()
	v := caseValues{existingSecret: "polyccm-cloud", hostNetwork: true}
	for i := 0; i+1 < len(flags); i += 2 {
		switch flags[i] {
		case "-f":
			var f struct {
				Credentials *struct {
					ExistingSecret *string `json:"existingSecret"`
				} `json:"credentials"`
				HostNetwork *bool `json:"hostNetwork"`
			}
			b, err := os.ReadFile(flags[i+1])
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			if f.Credentials != nil && f.Credentials.ExistingSecret != nil {
				v.existingSecret = *f.Credentials.ExistingSecret
			}
			if f.HostNetwork != nil {
				v.hostNetwork = *f.HostNetwork
			}
		case "--set":
			for _, kv := range strings.Split(flags[i+1], ",") {
				k, val, _ := strings.Cut(kv, "=")
				switch k {
				case "credentials.existingSecret":
					v.existingSecret = val
				case "hostNetwork":
					v.hostNetwork = val == "true"
				}
			}
		}
	}
	return v
}

// workload returns the pod template of the rendered Deployment or
// DaemonSet, its kind and (Deployment) replicas.
func workload(t *testing.T, r rendered) (corev1.PodTemplateSpec, string, int32) {
	t.Helper()
	deps, dss := r.ofKind("Deployment"), r.ofKind("DaemonSet")
	switch {
	case len(deps) == 1 && len(dss) == 0:
		var d appsv1.Deployment
		deps[0].into(t, &d)
		if d.Spec.Replicas == nil {
			t.Fatal("the Deployment sets no replicas")
		}
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("the Deployment's selector %v does not select its pods %v (%v)", d.Spec.Selector, d.Spec.Template.Labels, err)
		}
		return d.Spec.Template, "Deployment", *d.Spec.Replicas
	case len(dss) == 1 && len(deps) == 0:
		var d appsv1.DaemonSet
		dss[0].into(t, &d)
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("the DaemonSet's selector %v does not select its pods %v (%v)", d.Spec.Selector, d.Spec.Template.Labels, err)
		}
		return d.Spec.Template, "DaemonSet", 0
	}
	t.Fatalf("%d Deployments and %d DaemonSets rendered, want one workload", len(deps), len(dss))
	return corev1.PodTemplateSpec{}, "", 0
}

// The taints a CCM must run through: Nodes wait for it (its own too), it
// runs on control-plane nodes, and it must run while nodes are not ready.
var ccmTolerations = []corev1.Toleration{
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
}

func checkRendered(t *testing.T, r rendered, wantDriver string, v caseValues) {
	t.Helper()
	if n := len(r.ofKind("Secret")); n != 0 {
		t.Errorf("the chart renders %d Secrets: credentials must come from an existing one", n)
	}
	pod, kind, replicas := workload(t, r)
	spec := pod.Spec

	// Identity: the chart's ServiceAccount, bound by the chart's RBAC.
	sa := r.one(t, "ServiceAccount")
	if spec.ServiceAccountName != sa.Name || sa.Namespace != chartNamespace {
		t.Errorf("the pods run as %q, the chart creates the ServiceAccount %s", spec.ServiceAccountName, sa)
	}
	if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken is off: polyccm needs its ServiceAccount's token")
	}
	bound := false
	for _, o := range r.ofKind("ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		o.into(t, &b)
		bound = bound || b.RoleRef.Name == "system:"+chartRelease && hasSubject(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace})
	}
	if !bound {
		t.Errorf("no ClusterRoleBinding binds system:%s to the ServiceAccount %s", chartRelease, sa)
	}

	// Scheduling.
	for _, want := range ccmTolerations {
		if !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool {
			return t.Key == want.Key && t.Operator == want.Operator && t.Effect == want.Effect
		}) {
			t.Errorf("no toleration for %s:%s", want.Key, want.Effect)
		}
	}
	if spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q, want system-cluster-critical", spec.PriorityClassName)
	}
	if !controlPlaneOnly(spec) {
		t.Errorf("the pods are not kept to control-plane nodes: nodeSelector %v, affinity %+v", spec.NodeSelector, spec.Affinity)
	}
	if spec.HostNetwork != v.hostNetwork {
		t.Errorf("hostNetwork %v, want %v", spec.HostNetwork, v.hostNetwork)
	}
	if spec.HostNetwork && spec.DNSPolicy != corev1.DNSDefault {
		t.Errorf("dnsPolicy %q with hostNetwork, want Default (cluster DNS may wait for polyccm)", spec.DNSPolicy)
	}

	// Security.
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault", psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v: want a read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("no CPU and memory requests: %v", c.Resources.Requests)
	}

	// The config: the ConfigMap, mounted where --config points.
	if got := configFlag(t, c); got != chartConfigPath {
		t.Errorf("--config %s, want %s", got, chartConfigPath)
	}
	volumes := map[string]corev1.Volume{}
	for _, vol := range spec.Volumes {
		volumes[vol.Name] = vol
	}
	var cmName, cmKey string
	var secretVolume *corev1.Volume
	for _, m := range c.VolumeMounts {
		vol := volumes[m.Name]
		switch {
		case vol.ConfigMap != nil && m.SubPath != "" && m.MountPath == chartConfigPath:
			cmName, cmKey = vol.ConfigMap.Name, m.SubPath // the file alone
		case vol.ConfigMap != nil && m.SubPath == "" && m.MountPath == path.Dir(chartConfigPath):
			cmName, cmKey = vol.ConfigMap.Name, path.Base(chartConfigPath) // the whole ConfigMap
		case vol.Secret != nil:
			if m.MountPath != chartSecretsDir || !m.ReadOnly {
				t.Errorf("the Secret %s is mounted at %s (read-only %v), want %s read-only", vol.Secret.SecretName, m.MountPath, m.ReadOnly, chartSecretsDir)
			}
			secretVolume = &vol
		}
	}
	if cmName == "" {
		t.Fatalf("%s is not mounted from a ConfigMap", chartConfigPath)
	}
	var cm corev1.ConfigMap
	for _, o := range r.ofKind("ConfigMap") {
		if o.Name == cmName {
			o.into(t, &cm)
		}
	}
	text, ok := cm.Data[cmKey]
	if !ok {
		t.Fatalf("the ConfigMap %s has no key %s", cmName, cmKey)
	}
	files := secretFiles(t, []byte(text))
	switch {
	case v.existingSecret == "" && secretVolume != nil:
		t.Errorf("the Secret %s is mounted though credentials.existingSecret is empty", secretVolume.Secret.SecretName)
	case v.existingSecret != "" && (secretVolume == nil || secretVolume.Secret.SecretName != v.existingSecret):
		t.Errorf("the Secret %s is not mounted (volume %+v)", v.existingSecret, secretVolume)
	case len(files) > 0 && secretVolume == nil:
		t.Errorf("the config reads %v but no Secret is mounted", files)
	}
	if secretVolume != nil && (secretVolume.Secret.Optional != nil && *secretVolume.Secret.Optional) {
		t.Error("the Secret is optional: a missing Secret would start polyccm without credentials")
	}
	cfg := loadChartConfig(t, wantDriver, text, files)

	if cfg.Driver != wantDriver {
		t.Errorf("driver %s, want %s", cfg.Driver, wantDriver)
	}
	if cfg.Kubeconfig != "" {
		t.Errorf("kubeconfig %q: in the cluster it must be empty, for the ServiceAccount's token", cfg.Kubeconfig)
	}
	if (kind == "DaemonSet" || replicas > 1) && !cfg.LeaderElection.Enabled {
		t.Errorf("%s with %d replicas and leader election off", kind, replicas)
	}
	if spec.HostNetwork {
		checkServing(t, "the chart's config", cfg.Serving)
		checkProbes(t, c, cfg.Serving.SecurePort)
	} else {
		// The kubelet probes the pod's address: no host, the same port.
		for kind, p := range probes(c) {
			if g := p.HTTPGet; g == nil || g.Host != "" || g.Port.IntValue() != cfg.Serving.SecurePort || g.Scheme != corev1.URISchemeHTTPS {
				t.Errorf("%s probe %+v without hostNetwork: want HTTPS to the pod on %d", kind, g, cfg.Serving.SecurePort)
			}
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == "https" && int(p.ContainerPort) == cfg.Serving.SecurePort
	}) {
		t.Errorf("no container port https %d: %+v", cfg.Serving.SecurePort, c.Ports)
	}

	// A PodDisruptionBudget exactly when a Deployment has replicas to spare.
	pdbs := r.ofKind("PodDisruptionBudget")
	if wantPDB := kind == "Deployment" && replicas > 1; wantPDB != (len(pdbs) == 1) || len(pdbs) > 1 {
		t.Errorf("%d PodDisruptionBudgets for a %s of %d replicas", len(pdbs), kind, replicas)
	}
	for _, o := range pdbs {
		var pdb policyv1.PodDisruptionBudget
		o.into(t, &pdb)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			t.Errorf("the PodDisruptionBudget's selector %v does not select the pods %v", pdb.Spec.Selector, pod.Labels)
		}
		if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
			t.Error("the PodDisruptionBudget allows nothing and forbids nothing")
		}
	}
}

// controlPlaneOnly reports whether every way the pod may be scheduled
// requires a control-plane node label.
func controlPlaneOnly(spec corev1.PodSpec) bool {
	cpLabels := []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}
	for _, l := range cpLabels {
		if _, ok := spec.NodeSelector[l]; ok {
			return true
		}
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for _, term := range terms {
		if !slices.ContainsFunc(term.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
			return slices.Contains(cpLabels, e.Key) && e.Operator == corev1.NodeSelectorOpExists
		}) {
			return false
		}
	}
	return len(terms) > 0
}

// loadChartConfig loads a rendered config with polyccm's own loader, its
// {file: /etc/polyccm/secrets/KEY} secrets moved to files KEY in a
// temporary directory, as the Secret's keys are files in the pod.
func loadChartConfig(t *testing.T, driverName, text string, files map[string]string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	kinds := driverSecretFields(t, driverName)
	for key, file := range files {
		rel, ok := strings.CutPrefix(file, chartSecretsDir+"/")
		if !ok || strings.Contains(rel, "/") {
			t.Errorf("%s: {file: %s} is not a key of the Secret mounted at %s", key, file, chartSecretsDir)
			continue
		}
		field, _ := strings.CutPrefix(key, "drivers."+driverName+".")
		content := "example-credential\n"
		if kinds[field] == "json" {
			content = `{"type": "service_account", "project_id": "example"}`
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(dir, "ccm.yaml")
	local := strings.ReplaceAll(text, chartSecretsDir+"/", dir+"/")
	if err := os.WriteFile(cfgFile, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := config.Load(config.Source{Path: cfgFile, Environ: []string{}})
	if err != nil {
		t.Fatalf("polyccm does not accept the chart's config: %v\n%s", err, text)
	}
	if len(warnings) > 0 {
		t.Errorf("polyccm warns about the chart's config: %q", warnings)
	}
	return cfg
}

// driverSecretFields lists a driver's secret fields (key path below
// drivers.NAME -> the kind of its secret tag), from its config struct.
func driverSecretFields(t *testing.T, name string) map[string]string {
	t.Helper()
	d, ok := driver.Default().Lookup(name)
	if !ok {
		t.Fatalf("no driver %s in this build", name)
	}
	return config.SecretFields(d.NewConfig())
}

// chartDefaults is values.yaml.
func chartDefaults(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal(repoFile(t, chartPath+"/values.yaml"), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The chart knows every driver polyccm has, and every secret field of
// each: credentials.keys names a Secret key for each, and the schema takes
// exactly those drivers. A driver gaining a secret fails this until the
// chart can fill it from the Secret.
func TestHelmCredentialKeysCoverDrivers(t *testing.T) {
	names := driver.Default().Names()
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(chartDrivers))) {
		t.Errorf("polyccm has the drivers %v, the chart tests %v", names, chartDrivers)
	}
	keys, _ := chartDefaults(t)["credentials"].(map[string]any)["keys"].(map[string]any)
	for _, name := range names {
		want := driverSecretFields(t, name)
		got, _ := keys[name].(map[string]any)
		if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
			t.Errorf("values.yaml credentials.keys.%s has %v, the driver's secret fields are %v", name, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
	var schema struct {
		Properties struct {
			Driver struct {
				Enum []string `json:"enum"`
			} `json:"driver"`
		} `json:"properties"`
	}
	if err := yaml.Unmarshal(repoFile(t, chartPath+"/values.schema.json"), &schema); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(slices.Values(schema.Properties.Driver.Enum)), slices.Sorted(slices.Values(names))) {
		t.Errorf("values.schema.json allows the drivers %v, polyccm has %v", schema.Properties.Driver.Enum, names)
	}
}

// rbacRules is the RBAC of a manifest: each role's rules, normalized, and
// each binding's role and subjects.
type rbacRules struct {
	roles    map[string][]string // Kind/[namespace/]name -> sorted normalized rules
	bindings map[string]string   // Kind/[namespace/]name -> roleRef Kind/name
	subjects map[string][]rbacv1.Subject
}

// normalizeRule writes a rule with each list sorted, so that the order of
// verbs or resources is no difference.
func normalizeRule(r rbacv1.PolicyRule) string {
	s := func(l []string) string { return strings.Join(slices.Sorted(slices.Values(l)), ",") }
	return fmt.Sprintf("apiGroups=[%s] resources=[%s] resourceNames=[%s] nonResourceURLs=[%s] verbs=[%s]",
		s(r.APIGroups), s(r.Resources), s(r.ResourceNames), s(r.NonResourceURLs), s(r.Verbs))
}

func collectRBAC(t *testing.T, objs []object) rbacRules {
	t.Helper()
	out := rbacRules{roles: map[string][]string{}, bindings: map[string]string{}, subjects: map[string][]rbacv1.Subject{}}
	for _, o := range objs {
		var rules []rbacv1.PolicyRule
		switch o.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			o.into(t, &r)
			rules = r.Rules
		case "Role":
			var r rbacv1.Role
			o.into(t, &r)
			rules = r.Rules
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			o.into(t, &b)
			out.bindings[o.String()] = b.RoleRef.Kind + "/" + b.RoleRef.Name
			out.subjects[o.String()] = b.Subjects
			continue
		case "RoleBinding":
			var b rbacv1.RoleBinding
			o.into(t, &b)
			out.bindings[o.String()] = b.RoleRef.Kind + "/" + b.RoleRef.Name
			out.subjects[o.String()] = b.Subjects
			continue
		default:
			continue
		}
		var norm []string
		for _, r := range rules {
			norm = append(norm, normalizeRule(r))
		}
		slices.Sort(norm)
		out.roles[o.String()] = norm
	}
	return out
}

// diffRBAC lists every difference in roles, rules and role references.
func diffRBAC(chart, manifests rbacRules) []string {
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(manifests.roles)) {
		if _, ok := chart.roles[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s is in the manifests, not in the chart", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(chart.roles)) {
		want, ok := manifests.roles[name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s is in the chart, not in the manifests", name))
			continue
		}
		got := chart.roles[name]
		for _, r := range got {
			if slices.Contains(want, r) {
				want = slices.Delete(want, slices.Index(want, r), slices.Index(want, r)+1)
			} else {
				diffs = append(diffs, fmt.Sprintf("%s: the chart's rule %s is not in the manifests", name, r))
			}
		}
		for _, r := range want {
			diffs = append(diffs, fmt.Sprintf("%s: the manifests' rule %s is not in the chart", name, r))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(manifests.bindings)) {
		if _, ok := chart.bindings[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s is in the manifests, not in the chart", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(chart.bindings)) {
		want, ok := manifests.bindings[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s is in the chart, not in the manifests", name))
		case want != chart.bindings[name]:
			diffs = append(diffs, fmt.Sprintf("%s binds %s in the chart, %s in the manifests", name, chart.bindings[name], want))
		}
	}
	return diffs
}

const (
	csrRole    = "system:polyccm:kubelet-serving-csr-approver"
	volumeRole = "system:polyccm:volume-labeller"
)

// The chart's RBAC is packaging/kubernetes/rbac.yaml's, rule by rule (plus
// the optional controllers' files when the values turn them on, and
// rbac-gce.yaml for driver gce), bound to the chart's ServiceAccount only.
func TestHelmRBACMatchesManifests(t *testing.T) {
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: chartRelease, Namespace: chartNamespace}
	for _, c := range []struct {
		name         string
		driver       string
		csr, volumes bool
		flags        []string
	}{
		{name: "defaults", driver: "digitalocean"},
		{name: "gce", driver: "gce", flags: []string{"--set", "driver=gce"}},
		{name: "aws, kubelet serving CSRs", driver: "aws", csr: true, flags: []string{"--set", "driver=aws,config.controllers.kubeletServingCSR=true"}},
		{name: "gce, both optional controllers", driver: "gce", csr: true, volumes: true,
			flags: []string{"--set", "driver=gce,config.controllers.kubeletServingCSR=true,config.controllers.volumeLabels=true"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := renderChart(t, chartRelease, chartNamespace, c.flags...)
			chart := collectRBAC(t, r.objects)

			files := []string{rbacPath}
			if c.csr {
				files = append(files, csrRBACPath)
			}
			if c.volumes {
				files = append(files, volumeRBACPath)
			}
			if c.driver == "gce" {
				files = append(files, gceRBACPath)
			}
			var objs []object
			for _, f := range files {
				objs = append(objs, splitObjects(t, repoFile(t, f))...)
			}
			manifests := collectRBAC(t, objs)
			if len(manifests.roles) == 0 || len(chart.roles) == 0 {
				t.Fatalf("no roles: %d in the chart, %d in %v", len(chart.roles), len(manifests.roles), files)
			}
			for _, d := range diffRBAC(chart, manifests) {
				t.Error(d)
			}

			// Subjects: the chart binds its ServiceAccount and nothing else;
			// the manifests bind the same one (with the user system:polyccm).
			for name, subjects := range chart.subjects {
				if len(subjects) != 1 || !hasSubject(subjects, sa) {
					t.Errorf("%s binds %+v, want only the ServiceAccount %s/%s", name, subjects, sa.Namespace, sa.Name)
				}
			}
			for name, subjects := range manifests.subjects {
				if !hasSubject(subjects, sa) {
					t.Errorf("%s does not bind the ServiceAccount %s/%s", name, sa.Namespace, sa.Name)
				}
			}
		})
	}

	// The comparison sees a rule added to either side, or a role of its own.
	t.Run("detects drift", func(t *testing.T) {
		r := renderChart(t, chartRelease, chartNamespace)
		base := func() (rbacRules, rbacRules) {
			return collectRBAC(t, r.objects), collectRBAC(t, splitObjects(t, repoFile(t, rbacPath)))
		}
		extra := normalizeRule(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
		chart, manifests := base()
		if d := diffRBAC(chart, manifests); len(d) != 0 {
			t.Fatalf("the baseline differs: %v", d)
		}
		for what, mutate := range map[string]func(chart, manifests *rbacRules){
			"a rule in the chart only": func(c, _ *rbacRules) {
				c.roles["ClusterRole/system:polyccm"] = append(c.roles["ClusterRole/system:polyccm"], extra)
			},
			"a rule in the manifests only": func(_, m *rbacRules) {
				m.roles["ClusterRole/system:polyccm"] = append(m.roles["ClusterRole/system:polyccm"], extra)
			},
			"a verb more": func(c, _ *rbacRules) {
				rules := slices.Clone(c.roles["Role/kube-system/polyccm:leader-election"])
				rules[0] = strings.Replace(rules[0], "verbs=[", "verbs=[delete,", 1)
				c.roles["Role/kube-system/polyccm:leader-election"] = rules
			},
			"a role in the chart only": func(c, _ *rbacRules) { c.roles["ClusterRole/extra"] = []string{extra} },
			"another roleRef":          func(c, _ *rbacRules) { c.bindings["ClusterRoleBinding/system:polyccm"] = "ClusterRole/cluster-admin" },
		} {
			chart, manifests := base()
			mutate(&chart, &manifests)
			if d := diffRBAC(chart, manifests); len(d) == 0 {
				t.Errorf("%s: no difference reported", what)
			}
		}
	})
}

// A value of the wrong type fails the render, naming the value.
func TestHelmRejectsWrongTypes(t *testing.T) {
	for _, c := range []struct {
		values, want string
	}{
		{`replicas: "two"`, "replicas"},
		{`replicas: 0`, "replicas"},
		{`hostNetwork: "yes"`, "hostNetwork"},
		{`driver: azure`, "driver"},
		{`kind: StatefulSet`, "kind"},
		{`config: {leaderElection: {enabled: "maybe"}}`, "leaderElection"},
		{`config: {serving: {securePort: "https"}}`, "securePort"},
		{`config: {controllers: {volumeLabels: "on"}}`, "volumeLabels"},
		{`image: {digest: latest}`, "digest"},
		{`credentials: {existingSecret: 5}`, "existingSecret"},
		{`credentials: {keys: {digitalocean: {token: "../etc/passwd"}}}`, "token"},
		{`tolerations: {key: x}`, "tolerations"},
		{`replica: 2`, "replica"},
	} {
		t.Run(c.values, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(c.values+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := templateChart(t, chartRelease, chartNamespace, "-f", f)
			if err == nil {
				t.Fatalf("rendered with %s:\n%.300s", c.values, out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("the error does not name %s: %v", c.want, err)
			}
		})
	}
}

// A credential given inline in the values would land in a ConfigMap and in
// the release's history: the render fails, naming the value, and without
// echoing the credential.
func TestHelmRefusesInlineCredentials(t *testing.T) {
	const credential = "dop_v1_0123456789abcdef-not-a-real-token"
	type tc struct{ name, values, want string }
	var cases []tc
	for _, d := range chartDrivers {
		for field := range driverSecretFields(t, d) {
			key := "config.drivers." + d + "." + field
			cases = append(cases,
				tc{key + " {value}", fmt.Sprintf("driver: %s\nconfig: {drivers: {%s: {%s: {value: %q}}}}\n", d, d, field, credential), key},
				tc{key + " string", fmt.Sprintf("driver: %s\nconfig: {drivers: {%s: {%s: %q}}}\n", d, d, field, credential), key},
				// Inline even without a Secret, and for a driver not selected.
				tc{key + " {value}, no Secret", fmt.Sprintf("driver: %s\ncredentials: {existingSecret: \"\"}\nconfig: {drivers: {%s: {%s: {value: %q}}}}\n", d, d, field, credential), key},
			)
			other := "aws"
			if d == other {
				other = "gce"
			}
			cases = append(cases,
				tc{key + " {value}, driver " + other,
					fmt.Sprintf("driver: %s\ncredentials: {existingSecret: \"\"}\nconfig: {drivers: {%s: {%s: {value: %q}}}}\n", other, d, field, credential), key},
				tc{key + " string, driver " + other,
					fmt.Sprintf("driver: %s\ncredentials: {existingSecret: \"\"}\nconfig: {drivers: {%s: {%s: %q}}}\n", other, d, field, credential), key})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(c.values), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := templateChart(t, chartRelease, chartNamespace, "-f", f)
			if err == nil {
				t.Fatalf("rendered an inline credential:\n%.400s", out)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "inline") {
				t.Errorf("the error does not name %s as inline: %v", c.want, err)
			}
			if strings.Contains(msg, credential) {
				t.Errorf("the error repeats the credential: %v", err)
			}
		})
	}

	// References are not inline: {env: NAME} (with the variable from env)
	// and {file: PATH} render, and polyccm accepts them.
	t.Run("references", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "values.yaml")
		values := `credentials: {existingSecret: ""}
config: {drivers: {digitalocean: {token: {env: DO_TOKEN}}}}
env: [{name: DO_TOKEN, valueFrom: {secretKeyRef: {name: do, key: token}}}]
`
		if err := os.WriteFile(f, []byte(values), 0o644); err != nil {
			t.Fatal(err)
		}
		r := renderChart(t, chartRelease, chartNamespace, "-f", f)
		var cm corev1.ConfigMap
		r.one(t, "ConfigMap").into(t, &cm)
		if !strings.Contains(cm.Data["ccm.yaml"], "env: DO_TOKEN") {
			t.Errorf("the {env:} reference is not in the config:\n%s", cm.Data["ccm.yaml"])
		}
		// And a reference and a Secret key for one field is ambiguous.
		if err := os.WriteFile(f, []byte("config: {drivers: {digitalocean: {token: {env: DO_TOKEN}}}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := templateChart(t, chartRelease, chartNamespace, "-f", f); err == nil || !strings.Contains(err.Error(), "credentials.keys.digitalocean.token") {
			t.Errorf("a token from both {env:} and the Secret: %v", err)
		}
	})
}

// The image is repository:tag, the tag defaulting to the chart's
// appVersion; a digest, when set, wins: repository@digest.
func TestHelmImage(t *testing.T) {
	_, appVersion := chartMeta(t)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		set, want string
	}{
		{"", chartImage + ":" + appVersion},
		{"image.tag=v9.8.7", chartImage + ":v9.8.7"},
		{"image.digest=" + digest, chartImage + "@" + digest},
		{"image.tag=v9.8.7,image.digest=" + digest, chartImage + "@" + digest},
		{"image.repository=registry.example.com/ccm,image.digest=" + digest, "registry.example.com/ccm@" + digest},
	} {
		t.Run(c.set, func(t *testing.T) {
			var flags []string
			if c.set != "" {
				flags = []string{"--set", c.set}
			}
			pod, _, _ := workload(t, renderChart(t, chartRelease, chartNamespace, flags...))
			if got := pod.Spec.Containers[0].Image; got != c.want {
				t.Errorf("image %s, want %s", got, c.want)
			}
		})
	}
}

// More than one replica, or a replica per node, needs leader election.
func TestHelmLeaderElection(t *testing.T) {
	for _, c := range []struct {
		set, want string // want: "" renders, else the error names it
	}{
		{"replicas=3,config.leaderElection.enabled=false", "replicas"},
		{"kind=DaemonSet,config.leaderElection.enabled=false", "leaderElection"},
		{"replicas=1,config.leaderElection.enabled=false", ""},
		{"replicas=3", ""},
	} {
		t.Run(c.set, func(t *testing.T) {
			out, err := templateChart(t, chartRelease, chartNamespace, "--set", c.set)
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && err == nil:
				t.Fatalf("rendered with %s:\n%.300s", c.set, out)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("the error does not name %s: %v", c.want, err)
			}
		})
	}
	// The leader-election Role follows the Lease the config names.
	r := renderChart(t, chartRelease, chartNamespace, "--set", "config.leaderElection.namespace=ccm,config.leaderElection.leaseName=polyccm")
	found := false
	for _, o := range r.ofKind("Role") {
		var role rbacv1.Role
		o.into(t, &role)
		for _, rule := range role.Rules {
			if slices.Contains(rule.Resources, "leases") && slices.Equal(rule.ResourceNames, []string{"polyccm"}) && role.Namespace == "ccm" {
				found = true
			}
		}
	}
	if !found {
		t.Error("no Role in namespace ccm grants the Lease polyccm")
	}
}

// The ServiceMonitor (off by default) scrapes /metrics over HTTPS through a
// Service that selects the pods on the secure port.
func TestHelmServiceMonitor(t *testing.T) {
	r := renderChart(t, chartRelease, chartNamespace)
	if n := len(r.ofKind("ServiceMonitor")) + len(r.ofKind("Service")); n != 0 {
		t.Errorf("%d Services and ServiceMonitors by default, want none", n)
	}
	r = renderChart(t, chartRelease, chartNamespace, "--set", "serviceMonitor.enabled=true,config.serving.securePort=10300",
		"--set", "metricsReader.subjects[0].kind=ServiceAccount,metricsReader.subjects[0].name=prometheus,metricsReader.subjects[0].namespace=monitoring")
	sm := r.one(t, "ServiceMonitor")
	var mon struct {
		APIVersion string `json:"apiVersion"`
		Spec       struct {
			Selector          metav1.LabelSelector `json:"selector"`
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Endpoints []struct {
				Port, Scheme, Path, BearerTokenFile string
				TLSConfig                           map[string]any `json:"tlsConfig"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(sm.doc, &mon); err != nil {
		t.Fatal(err)
	}
	if mon.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %s", mon.APIVersion)
	}
	if len(mon.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(mon.Spec.Endpoints))
	}
	ep := mon.Spec.Endpoints[0]
	if ep.Scheme != "https" || ep.Path != "/metrics" || ep.BearerTokenFile == "" {
		t.Errorf("endpoint %+v: want https /metrics with a bearer token (polyccm authorizes /metrics)", ep)
	}
	var svc corev1.Service
	r.one(t, "Service").into(t, &svc)
	sel, err := metav1.LabelSelectorAsSelector(&mon.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service %v", mon.Spec.Selector, svc.Labels)
	}
	if !slices.Contains(mon.Spec.NamespaceSelector.MatchNames, svc.Namespace) {
		t.Errorf("the ServiceMonitor looks in %v, the Service is in %s", mon.Spec.NamespaceSelector.MatchNames, svc.Namespace)
	}
	pod, _, _ := workload(t, r)
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("the Service selects %v, the pods are %v", svc.Spec.Selector, pod.Labels)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port })
	if i < 0 {
		t.Fatalf("the Service has no port %s: %+v", ep.Port, svc.Spec.Ports)
	}
	p := svc.Spec.Ports[i]
	if p.Port != 10300 || !slices.ContainsFunc(pod.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool {
		return cp.ContainerPort == 10300 && (p.TargetPort.StrVal == cp.Name || p.TargetPort.IntValue() == 10300)
	}) {
		t.Errorf("Service port %+v does not reach the secure port 10300 of %+v", p, pod.Spec.Containers[0].Ports)
	}
	// The scraper may read /metrics.
	found := false
	for _, o := range r.ofKind("ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		o.into(t, &b)
		found = found || b.RoleRef.Name == chartRelease+":metrics-reader" &&
			hasSubject(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: "monitoring"})
	}
	if !found {
		t.Error("metricsReader.subjects are not bound to the metrics-reader ClusterRole")
	}
}

// serviceMonitorCRD is the Prometheus operator's ServiceMonitor CRD cut
// down to the fields the chart writes, with their types and patterns from
// monitoring.coreos.com_servicemonitors.yaml: server-side apply refuses a
// field it does not declare, as it would the real CRD's.
const serviceMonitorCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names:
    kind: ServiceMonitor
    listKind: ServiceMonitorList
    plural: servicemonitors
    singular: servicemonitor
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          required: [spec]
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              required: [selector]
              properties:
                jobLabel: {type: string}
                namespaceSelector:
                  type: object
                  properties:
                    any: {type: boolean}
                    matchNames: {type: array, items: {type: string}}
                selector:
                  type: object
                  x-kubernetes-map-type: atomic
                  properties:
                    matchLabels: {type: object, additionalProperties: {type: string}}
                    matchExpressions:
                      type: array
                      items:
                        type: object
                        required: [key, operator]
                        properties:
                          key: {type: string}
                          operator: {type: string}
                          values: {type: array, items: {type: string}}
                endpoints:
                  type: array
                  items:
                    type: object
                    properties:
                      port: {type: string}
                      scheme: {type: string, enum: [http, https, HTTP, HTTPS]}
                      path: {type: string}
                      interval: {type: string, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
                      scrapeTimeout: {type: string, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
                      bearerTokenFile: {type: string}
                      honorLabels: {type: boolean}
                      tlsConfig:
                        type: object
                        properties:
                          insecureSkipVerify: {type: boolean}
                          serverName: {type: string}
                          caFile: {type: string}
                          certFile: {type: string}
                          keyFile: {type: string}
                          ca: {type: object, x-kubernetes-preserve-unknown-fields: true}
                          cert: {type: object, x-kubernetes-preserve-unknown-fields: true}
                          keySecret: {type: object, x-kubernetes-preserve-unknown-fields: true}
                      relabelings: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
                      metricRelabelings: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// waitForKind waits until the API server serves resource in groupVersion
// (a CRD just created takes a moment).
func waitForKind(ctx context.Context, cs kubernetes.Interface, groupVersion, resource string) error {
	for {
		list, err := cs.Discovery().ServerResourcesForGroupVersion(groupVersion)
		if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s not served: %v", groupVersion, resource, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// The rendered manifests pass the API server's validation and admission:
// every case with server-side dry run (the ServiceMonitor with its CRD),
// and one release created for real, whose ServiceAccount then may do what
// polyccm does and no more.
func TestHelmApply(t *testing.T) {
	cluster.HelmForTest(t)
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cp.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Apply(ctx, cp.AdminConfig, []byte(serviceMonitorCRD), false); err != nil {
		t.Fatalf("installing the ServiceMonitor CRD: %v", err)
	}
	if err := waitForKind(ctx, cs, "monitoring.coreos.com/v1", "servicemonitors"); err != nil {
		t.Fatal(err)
	}

	for _, c := range chartCases() {
		t.Run("dry-run/"+c.name, func(t *testing.T) {
			r := renderChart(t, chartRelease, chartNamespace, c.flags...)
			if err := cluster.Apply(ctx, cp.AdminConfig, []byte(r.text), true); err != nil {
				t.Errorf("server-side dry run: %v", err)
			}
		})
	}
	t.Run("dry-run/rejects an invalid value", func(t *testing.T) {
		r := renderChart(t, chartRelease, chartNamespace, "--set", "podSecurityContext.runAsUser=-1")
		err := cluster.Apply(ctx, cp.AdminConfig, []byte(r.text), true)
		if err == nil || !strings.Contains(err.Error(), "runAsUser") {
			t.Errorf("the API server accepted runAsUser -1, or said something else: %v", err)
		}
	})

	t.Run("create", func(t *testing.T) {
		const ns, release = "polyccm-helm", "ccm"
		r := renderChart(t, release, ns, "--set", "serviceMonitor.enabled=true")
		manifest := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n---\n" + r.text
		if err := cluster.Apply(ctx, cp.AdminConfig, []byte(manifest), false); err != nil {
			t.Fatalf("applying the release: %v", err)
		}
		for _, o := range r.objects {
			if !exists(ctx, t, cs, o) {
				t.Errorf("%s was not created", o)
			}
		}
		pod, _, _ := workload(t, r)
		// With the host network the secure port is a host port, which keeps
		// two replicas off one node.
		dep, err := cs.AppsV1().Deployments(ns).Get(ctx, release+"-polyccm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ports := dep.Spec.Template.Spec.Containers[0].Ports; len(ports) != 1 || ports[0].HostPort != ports[0].ContainerPort {
			t.Errorf("the secure port is not a host port: %+v", ports)
		}
		account := "system:serviceaccount:" + ns + ":" + pod.Spec.ServiceAccountName
		groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
		allowed := func(a authorizationv1.ResourceAttributes) bool {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: account, Groups: groups, ResourceAttributes: &a}}
			got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return got.Status.Allowed
		}
		for _, c := range []struct {
			attrs authorizationv1.ResourceAttributes
			want  bool
		}{
			{authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes"}, true},
			{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes", Subresource: "status"}, true},
			{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "services", Subresource: "status"}, true},
			{authorizationv1.ResourceAttributes{Verb: "create", Resource: "events", Group: "events.k8s.io", Namespace: "default"}, true},
			{authorizationv1.ResourceAttributes{Verb: "update", Resource: "leases", Group: "coordination.k8s.io", Namespace: "kube-system", Name: "cloud-controller-manager"}, true},
			{authorizationv1.ResourceAttributes{Verb: "create", Resource: "tokenreviews", Group: "authentication.k8s.io"}, true},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "extension-apiserver-authentication"}, true},
			// No more than that.
			{authorizationv1.ResourceAttributes{Verb: "update", Resource: "leases", Group: "coordination.k8s.io", Namespace: "kube-system", Name: "kube-controller-manager"}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: ns}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "ingress-uid"}, false}, // GCE's only
			{authorizationv1.ResourceAttributes{Verb: "update", Resource: "certificatesigningrequests", Subresource: "approval", Group: "certificates.k8s.io"}, false},
			{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "persistentvolumes"}, false},
		} {
			if got := allowed(c.attrs); got != c.want {
				t.Errorf("%s may %s %s/%s %s in %q: %v, want %v", account, c.attrs.Verb, c.attrs.Resource, c.attrs.Subresource, c.attrs.Name, c.attrs.Namespace, got, c.want)
			}
		}
	})
}

// exists gets a created object back by its kind.
func exists(ctx context.Context, t *testing.T, cs kubernetes.Interface, o object) bool {
	t.Helper()
	var err error
	get := metav1.GetOptions{}
	switch o.Kind {
	case "ServiceAccount":
		_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Get(ctx, o.Name, get)
	case "ConfigMap":
		_, err = cs.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, get)
	case "Service":
		_, err = cs.CoreV1().Services(o.Namespace).Get(ctx, o.Name, get)
	case "Deployment":
		_, err = cs.AppsV1().Deployments(o.Namespace).Get(ctx, o.Name, get)
	case "DaemonSet":
		_, err = cs.AppsV1().DaemonSets(o.Namespace).Get(ctx, o.Name, get)
	case "PodDisruptionBudget":
		_, err = cs.PolicyV1().PodDisruptionBudgets(o.Namespace).Get(ctx, o.Name, get)
	case "ClusterRole":
		_, err = cs.RbacV1().ClusterRoles().Get(ctx, o.Name, get)
	case "ClusterRoleBinding":
		_, err = cs.RbacV1().ClusterRoleBindings().Get(ctx, o.Name, get)
	case "Role":
		_, err = cs.RbacV1().Roles(o.Namespace).Get(ctx, o.Name, get)
	case "RoleBinding":
		_, err = cs.RbacV1().RoleBindings(o.Namespace).Get(ctx, o.Name, get)
	case "ServiceMonitor":
		var raw []byte
		raw, err = cs.Discovery().RESTClient().Get().AbsPath("/apis/monitoring.coreos.com/v1/namespaces", o.Namespace, "servicemonitors", o.Name).DoRaw(ctx)
		if err == nil && !bytes.Contains(raw, []byte(`"kind":"ServiceMonitor"`)) {
			err = fmt.Errorf("unexpected answer %s", raw)
		}
	default:
		t.Errorf("%s: no check for kind %s", o, o.Kind)
		return true
	}
	if err != nil {
		t.Logf("%s: %v", o, err)
	}
	return err == nil
}
