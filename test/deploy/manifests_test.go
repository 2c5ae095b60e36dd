package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/test/cluster"
	"github.com/polyccm/polyccm/test/harness"
)

const (
	rbacPath      = "packaging/kubernetes/rbac.yaml"
	staticPodPath = "packaging/kubernetes/static-pod.yaml"
	daemonSetPath = "packaging/kubernetes/daemonset.yaml"

	uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"
	controlPlaneTaint  = "node-role.kubernetes.io/control-plane"
)

// The optional controllers' opt-in roles, each granting what its
// controller alone needs, and the GCE driver's, for driver gce only.
const (
	csrRBACPath    = "packaging/kubernetes/rbac-kubelet-serving-csr.yaml"
	volumeRBACPath = "packaging/kubernetes/rbac-volume-labels.yaml"
	gceRBACPath    = "packaging/kubernetes/rbac-gce.yaml"
)

var manifests = []string{rbacPath, staticPodPath, daemonSetPath, csrRBACPath, volumeRBACPath, gceRBACPath}

// Each manifest passes the API server's validation and admission with
// server-side apply, dry-run: the static pod as a Pod in kube-system.
func TestManifestsDryRun(t *testing.T) {
	cp := controlPlane(t)
	apply := func(data []byte) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cluster.Apply(ctx, cp.AdminConfig, data, true)
	}
	for _, m := range manifests {
		t.Run(filepath.Base(m), func(t *testing.T) {
			if err := apply(repoFile(t, m)); err != nil {
				t.Errorf("server-side dry-run of %s: %v", m, err)
			}
		})
	}

	// The check can fail: a misspelt field, an invalid value and a missing
	// required field are each rejected.
	for _, c := range []struct {
		name, file, old, new, want string
	}{
		{"static pod, misspelt field", staticPodPath, "hostNetwork: true", "hostNetwrk: true", "hostNetwrk"},
		{"daemonset, invalid value", daemonSetPath, "dnsPolicy: Default", "dnsPolicy: Sometimes", "dnsPolicy"},
		{"rbac, missing roleRef", rbacPath, "roleRef:", "roleReference:", "roleRef"},
	} {
		t.Run("broken/"+c.name, func(t *testing.T) {
			data := string(repoFile(t, c.file))
			if !strings.Contains(data, c.old) {
				t.Fatalf("%s has no %q to break", c.file, c.old)
			}
			err := apply([]byte(strings.Replace(data, c.old, c.new, 1)))
			if err == nil {
				t.Fatalf("the API server accepted %s with %q", c.file, c.new)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("the error does not mention %q: %v", c.want, err)
			}
			t.Logf("rejected as expected: %v", err)
		})
	}
}

// documents splits a manifest into its YAML documents, keyed by kind/name.
func documents(t *testing.T, rel string) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(repoFile(t, rel))))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		var meta struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if meta.Kind == "" {
			continue // comments only
		}
		docs[meta.Kind+"/"+meta.Name] = doc
	}
}

// decode strictly decodes the document kind/name of a manifest into out.
func decode(t *testing.T, rel, kindName string, out any) {
	t.Helper()
	doc, ok := documents(t, rel)[kindName]
	if !ok {
		t.Fatalf("%s has no %s", rel, kindName)
	}
	if err := yaml.UnmarshalStrict(doc, out); err != nil {
		t.Fatalf("%s: %s: %v", rel, kindName, err)
	}
}

func hasToleration(ts []corev1.Toleration, key string) bool {
	for _, tol := range ts {
		if tol.Key != key || (tol.Effect != "" && tol.Effect != corev1.TaintEffectNoSchedule) {
			continue
		}
		if tol.Operator == corev1.TolerationOpExists || (tol.Operator == corev1.TolerationOpEqual || tol.Operator == "") && (key != uninitializedTaint || tol.Value == "true") {
			return true
		}
	}
	return false
}

// mountFor returns the container's mount of the named volume.
func mountFor(t *testing.T, c corev1.Container, volume string) corev1.VolumeMount {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m
		}
	}
	t.Fatalf("container %s does not mount the volume %s", c.Name, volume)
	return corev1.VolumeMount{}
}

// configFlag returns the --config argument of a container's command.
func configFlag(t *testing.T, c corev1.Container) string {
	t.Helper()
	argv := append(slices.Clone(c.Command), c.Args...)
	if len(argv) < 2 || path.Base(argv[0]) != "polyccm" || argv[1] != "run" {
		t.Fatalf("container %s runs %q, want polyccm run", c.Name, argv)
	}
	for i, a := range argv {
		if a == "--config" && i+1 < len(argv) {
			return argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
	}
	t.Fatalf("container %s runs %q without --config", c.Name, argv)
	return ""
}

// probes returns the container's HTTP probes by kind.
func probes(c corev1.Container) map[string]*corev1.Probe {
	m := map[string]*corev1.Probe{}
	for kind, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p != nil {
			m[kind] = p
		}
	}
	return m
}

// checkProbes checks the probes reach polyccm's secure port over HTTPS on
// loopback (the pods use the host network) at a health path.
func checkProbes(t *testing.T, c corev1.Container, port int) {
	t.Helper()
	ps := probes(c)
	if ps["liveness"] == nil {
		t.Errorf("container %s has no liveness probe", c.Name)
	}
	for kind, p := range ps {
		g := p.HTTPGet
		if g == nil {
			t.Errorf("%s probe: not an HTTP GET", kind)
			continue
		}
		if g.Scheme != corev1.URISchemeHTTPS || g.Host != "127.0.0.1" || g.Port.IntValue() != port {
			t.Errorf("%s probe: %s://%s:%s, want https://127.0.0.1:%d", kind, g.Scheme, g.Host, g.Port.String(), port)
		}
		if !slices.Contains([]string{"/healthz", "/livez", "/readyz"}, g.Path) {
			t.Errorf("%s probe: path %s is not one polyccm serves without credentials", kind, g.Path)
		}
		if kind != "readiness" && g.Path == "/readyz" {
			t.Errorf("%s probe on /readyz: a cloud outage would restart polyccm", kind)
		}
	}
}

// probePaths lists the paths the shipped manifests probe, for the test that
// asks the running binary for them without credentials.
func probePaths(t *testing.T) []string {
	t.Helper()
	var pod corev1.Pod
	decode(t, staticPodPath, "Pod/polyccm", &pod)
	var ds appsv1.DaemonSet
	decode(t, daemonSetPath, "DaemonSet/polyccm", &ds)
	var paths []string
	for _, c := range append(pod.Spec.Containers, ds.Spec.Template.Spec.Containers...) {
		for _, p := range probes(c) {
			if p.HTTPGet != nil && !slices.Contains(paths, p.HTTPGet.Path) {
				paths = append(paths, p.HTTPGet.Path)
			}
		}
	}
	return paths
}

// servingOf reads serving.securePort and serving.bindAddress from a YAML
// config, with polyccm's defaults for what it leaves out.
func servingOf(t *testing.T, text []byte) config.Serving {
	t.Helper()
	var c struct {
		Serving struct {
			BindAddress *string `json:"bindAddress"`
			SecurePort  *int    `json:"securePort"`
		} `json:"serving"`
	}
	if err := yaml.Unmarshal(text, &c); err != nil {
		t.Fatal(err)
	}
	s := config.Defaults().Serving
	if c.Serving.BindAddress != nil {
		s.BindAddress = *c.Serving.BindAddress
	}
	if c.Serving.SecurePort != nil {
		s.SecurePort = *c.Serving.SecurePort
	}
	return s
}

// checkServing checks a probe on 127.0.0.1 can reach the configured address.
func checkServing(t *testing.T, what string, s config.Serving) {
	t.Helper()
	if !slices.Contains([]string{"0.0.0.0", "::", "127.0.0.1"}, s.BindAddress) {
		t.Errorf("%s: serving.bindAddress %s: the probes on 127.0.0.1 cannot reach it", what, s.BindAddress)
	}
}

func TestStaticPod(t *testing.T) {
	var pod corev1.Pod
	decode(t, staticPodPath, "Pod/polyccm", &pod)
	spec := pod.Spec
	if pod.Namespace != "kube-system" {
		t.Errorf("namespace %q, want kube-system", pod.Namespace)
	}
	if !spec.HostNetwork {
		t.Error("hostNetwork is off")
	}
	if spec.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName %q, want system-node-critical", spec.PriorityClassName)
	}
	if spec.ServiceAccountName != "" {
		t.Error("a static pod cannot use a ServiceAccount: polyccm's identity is the kubeconfig's client certificate")
	}
	for _, key := range []string{uninitializedTaint, controlPlaneTaint} {
		if !hasToleration(spec.Tolerations, key) {
			t.Errorf("no toleration for %s:NoSchedule", key)
		}
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	checkImage(t, staticPodPath, c)

	// Root, whatever the image's user: the host's kubeconfig and secrets
	// are root's with mode 0600. The container's securityContext wins over
	// the pod's.
	user, group := effectiveIDs(spec.SecurityContext, c.SecurityContext)
	if user == nil || *user != 0 || group == nil || *group != 0 {
		t.Errorf("the container runs as user %v group %v, want 0 and 0: the image's default user 65532 cannot read the host's 0600 files", deref(user), deref(group))
	}

	// The config and kubeconfig come from the host's /etc/polyccm, at the
	// same path, so the config's paths mean the same as under systemd.
	cfgPath := configFlag(t, c)
	if cfgPath != config.DefaultPath {
		t.Errorf("--config %s, want %s (the host's path)", cfgPath, config.DefaultPath)
	}
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if hp := spec.Volumes[i].HostPath; hp != nil && hp.Path == filepath.Dir(config.DefaultPath) {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil {
		t.Fatalf("no hostPath volume for %s", filepath.Dir(config.DefaultPath))
	}
	if m := mountFor(t, c, vol.Name); m.MountPath != vol.HostPath.Path || !m.ReadOnly {
		t.Errorf("%s is mounted at %s (read-only %v), want %s read-only", vol.HostPath.Path, m.MountPath, m.ReadOnly, vol.HostPath.Path)
	}

	// The host's config is the packaged ccm.example.yaml, edited.
	s := servingOf(t, repoFile(t, "ccm.example.yaml"))
	checkServing(t, "ccm.example.yaml", s)
	checkProbes(t, c, s.SecurePort)
}

func TestDaemonSet(t *testing.T) {
	var ds appsv1.DaemonSet
	decode(t, daemonSetPath, "DaemonSet/polyccm", &ds)
	spec := ds.Spec.Template.Spec
	if ds.Namespace != "kube-system" {
		t.Errorf("namespace %q, want kube-system", ds.Namespace)
	}

	// Control-plane nodes only, including uninitialized ones.
	if v, ok := spec.NodeSelector[controlPlaneTaint]; !ok || v != "" {
		t.Errorf("nodeSelector %v, want %s: \"\"", spec.NodeSelector, controlPlaneTaint)
	}
	for _, key := range []string{uninitializedTaint, controlPlaneTaint} {
		if !hasToleration(spec.Tolerations, key) {
			t.Errorf("no toleration for %s:NoSchedule", key)
		}
	}
	if spec.PriorityClassName == "" {
		t.Error("no priorityClassName")
	}

	// The identity rbac.yaml binds.
	checkBoundServiceAccount(t, ds.Namespace, spec.ServiceAccountName)

	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	checkImage(t, daemonSetPath, c)
	// The image's own non-root user, which the Secret's mode and fsGroup
	// are made for.
	if user, group := effectiveIDs(spec.SecurityContext, c.SecurityContext); user == nil || *user != 65532 || group == nil || *group != 65532 {
		t.Errorf("the container runs as user %v group %v, want the image's 65532:65532", deref(user), deref(group))
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}

	// The config comes from the ConfigMap in the same file.
	cfgPath := configFlag(t, c)
	var cfgMount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if v := volumes[m.Name]; v.ConfigMap != nil && path.Dir(cfgPath) == m.MountPath {
			cfgMount = &c.VolumeMounts[i]
		}
	}
	if cfgMount == nil {
		t.Fatalf("--config %s is not in a mounted ConfigMap", cfgPath)
	}
	var cm corev1.ConfigMap
	decode(t, daemonSetPath, "ConfigMap/"+volumes[cfgMount.Name].ConfigMap.Name, &cm)
	if cm.Namespace != ds.Namespace {
		t.Errorf("ConfigMap %s is in %q, the DaemonSet in %q", cm.Name, cm.Namespace, ds.Namespace)
	}
	cfgText, ok := cm.Data[path.Base(cfgPath)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", cm.Name, path.Base(cfgPath))
	}

	// The secrets come from a Secret mounted as files.
	var secretMount string
	for _, m := range c.VolumeMounts {
		if v := volumes[m.Name]; v.Secret != nil {
			secretMount = m.MountPath
			if !m.ReadOnly {
				t.Errorf("the Secret %s is mounted writable", v.Secret.SecretName)
			}
		}
	}
	if secretMount == "" {
		t.Fatal("no Secret is mounted")
	}

	// The ConfigMap's config loads, with its {file:} secrets under the
	// Secret's mount (replaced by a local file to load it here).
	files := secretFiles(t, []byte(cfgText))
	if len(files) == 0 {
		t.Error("the config in the ConfigMap reads no secret {file: ...}")
	}
	dir := t.TempDir()
	cfgFile, tokenFile := filepath.Join(dir, "ccm.yaml"), filepath.Join(dir, "secret")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("example-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for key, file := range files {
		if !strings.HasPrefix(file, secretMount+"/") {
			t.Errorf("%s: {file: %s} is not in the Secret's mount %s", key, file, secretMount)
		}
		env = append(env, config.EnvPrefix+strings.ReplaceAll(key, ".", "__")+"__FILE="+tokenFile)
	}
	cfg, _, err := config.Load(config.Source{Path: cfgFile, Environ: env})
	if err != nil {
		t.Fatalf("the config in ConfigMap %s does not load: %v", cm.Name, err)
	}
	if cfg.Kubeconfig != "" {
		t.Errorf("the config in ConfigMap %s sets kubeconfig %q: in-cluster it must be empty (the ServiceAccount's token)", cm.Name, cfg.Kubeconfig)
	}
	if !cfg.LeaderElection.Enabled {
		t.Error("leader election is off, with a replica per control-plane node")
	}
	checkServing(t, "ConfigMap "+cm.Name, cfg.Serving)
	checkProbes(t, c, cfg.Serving.SecurePort)
	if !spec.HostNetwork {
		t.Error("hostNetwork is off: the probes on 127.0.0.1 would miss, and the pod network may wait for polyccm")
	}
}

// releaseTag is a polyccm release's version, the tag `make image` gives it.
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// checkImage checks a manifest names the image `make image` builds by
// default (the Makefile's IMAGE) at a release tag, not a placeholder.
func checkImage(t *testing.T, rel string, c corev1.Container) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)$`).FindSubmatch(repoFile(t, "Makefile"))
	if m == nil {
		t.Fatal("the Makefile sets no default IMAGE ?= ...")
	}
	repo, tag, ok := strings.Cut(c.Image, ":")
	if !ok || repo != string(m[1]) || !releaseTag.MatchString(tag) {
		t.Errorf("%s: image %q, want %s:vX.Y.Z, what make image builds", rel, c.Image, m[1])
	}
	if data := strings.ToLower(string(repoFile(t, rel))); strings.Contains(data, "placeholder") || strings.Contains(data, "example.com") {
		t.Errorf("%s still mentions a placeholder or example.com", rel)
	}
}

// effectiveIDs is the user and group a container runs as, where the
// manifest sets them: the container's settings override the pod's.
func effectiveIDs(pod *corev1.PodSecurityContext, c *corev1.SecurityContext) (user, group *int64) {
	if pod != nil {
		user, group = pod.RunAsUser, pod.RunAsGroup
	}
	if c != nil && c.RunAsUser != nil {
		user = c.RunAsUser
	}
	if c != nil && c.RunAsGroup != nil {
		group = c.RunAsGroup
	}
	return user, group
}

func deref(p *int64) any {
	if p == nil {
		return "unset (the image's)"
	}
	return *p
}

// secretFiles returns, by config key, the {file: PATH} secrets of a YAML
// config's drivers section, e.g. "drivers.digitalocean.token" -> path.
func secretFiles(t *testing.T, text []byte) map[string]string {
	t.Helper()
	var c struct {
		Drivers map[string]any `json:"drivers"`
	}
	if err := yaml.Unmarshal(text, &c); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if f, ok := m["file"].(string); ok && len(m) == 1 {
			out[key] = f
			return
		}
		for k, sub := range m {
			walk(key+"."+k, sub)
		}
	}
	for name, d := range c.Drivers {
		walk("drivers."+name, d)
	}
	return out
}

// rbac is rbac.yaml's objects.
type rbac struct {
	serviceAccounts     []corev1.ServiceAccount
	roles               []rbacv1.Role
	clusterRoles        []rbacv1.ClusterRole
	roleBindings        []rbacv1.RoleBinding
	clusterRoleBindings []rbacv1.ClusterRoleBinding
}

func loadRBAC(t *testing.T) rbac { return loadRBACFile(t, rbacPath) }

func loadRBACFile(t *testing.T, rbacPath string) rbac {
	t.Helper()
	var r rbac
	for kindName, doc := range documents(t, rbacPath) {
		kind, _, _ := strings.Cut(kindName, "/")
		var err error
		switch kind {
		case "ServiceAccount":
			var o corev1.ServiceAccount
			err = yaml.UnmarshalStrict(doc, &o)
			r.serviceAccounts = append(r.serviceAccounts, o)
		case "Role":
			var o rbacv1.Role
			err = yaml.UnmarshalStrict(doc, &o)
			r.roles = append(r.roles, o)
		case "ClusterRole":
			var o rbacv1.ClusterRole
			err = yaml.UnmarshalStrict(doc, &o)
			r.clusterRoles = append(r.clusterRoles, o)
		case "RoleBinding":
			var o rbacv1.RoleBinding
			err = yaml.UnmarshalStrict(doc, &o)
			r.roleBindings = append(r.roleBindings, o)
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			err = yaml.UnmarshalStrict(doc, &o)
			r.clusterRoleBindings = append(r.clusterRoleBindings, o)
		default:
			t.Errorf("%s: unexpected %s", rbacPath, kindName)
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", rbacPath, kindName, err)
		}
	}
	return r
}

func hasSubject(subjects []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, x := range subjects {
		if x.Kind == s.Kind && x.Name == s.Name && x.Namespace == s.Namespace {
			return true
		}
	}
	return false
}

// checkBoundServiceAccount checks rbac.yaml creates the ServiceAccount and
// gives it every binding the user system:polyccm has.
func checkBoundServiceAccount(t *testing.T, namespace, name string) {
	t.Helper()
	if name == "" {
		t.Error("no serviceAccountName: the pod would run as default")
		return
	}
	r := loadRBAC(t)
	found := false
	for _, sa := range r.serviceAccounts {
		found = found || sa.Namespace == namespace && sa.Name == name
	}
	if !found {
		t.Errorf("%s does not create the ServiceAccount %s/%s", rbacPath, namespace, name)
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, Name: harness.PolyccmUser}
	for _, b := range r.clusterRoleBindings {
		if hasSubject(b.Subjects, user) && !hasSubject(b.Subjects, sa) {
			t.Errorf("ClusterRoleBinding %s binds %s but not the ServiceAccount %s/%s", b.Name, user.Name, namespace, name)
		}
	}
	for _, b := range r.roleBindings {
		if hasSubject(b.Subjects, user) && !hasSubject(b.Subjects, sa) {
			t.Errorf("RoleBinding %s/%s binds %s but not the ServiceAccount %s/%s", b.Namespace, b.Name, user.Name, namespace, name)
		}
	}
}

// rbac.yaml is least privilege: no cluster-admin, no wildcards, the lease
// limited to the default lease name.
func TestRBAC(t *testing.T) {
	r := loadRBAC(t)
	var refs []rbacv1.RoleRef
	for _, b := range r.clusterRoleBindings {
		refs = append(refs, b.RoleRef)
	}
	for _, b := range r.roleBindings {
		refs = append(refs, b.RoleRef)
	}
	for _, ref := range refs {
		if ref.Name == "cluster-admin" || ref.Name == "admin" || ref.Name == "edit" {
			t.Errorf("a binding to %s %s", ref.Kind, ref.Name)
		}
	}
	var rules []rbacv1.PolicyRule
	for _, cr := range r.clusterRoles {
		rules = append(rules, cr.Rules...)
	}
	for _, ro := range r.roles {
		rules = append(rules, ro.Rules...)
	}
	for _, rule := range rules {
		for _, list := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.NonResourceURLs} {
			if slices.Contains(list, "*") {
				t.Errorf("a wildcard in %+v", rule)
			}
		}
		if slices.Contains(rule.Resources, "secrets") {
			t.Errorf("access to Secrets: %+v", rule)
		}
	}

	le := config.Defaults().LeaderElection
	leaseOK := false
	for _, ro := range r.roles {
		for _, rule := range ro.Rules {
			if ro.Namespace == le.Namespace && slices.Contains(rule.Resources, "leases") && slices.Contains(rule.ResourceNames, le.LeaseName) && slices.Contains(rule.Verbs, "update") {
				leaseOK = true
			}
		}
	}
	if !leaseOK {
		t.Errorf("no Role lets polyccm update the Lease %s/%s (leaderElection's default)", le.Namespace, le.LeaseName)
	}
	checkBoundServiceAccount(t, "kube-system", "polyccm")
}

// The optional controllers' permissions are opt-in: rbac.yaml alone grants
// neither approving kubelet serving certificates nor labelling
// PersistentVolumes, and each opt-in file grants only its controller's
// rules, bound to both of polyccm's identities.
func TestOptionalControllersRBACIsOptIn(t *testing.T) {
	base := loadRBAC(t)
	for _, cr := range base.clusterRoles {
		for _, rule := range cr.Rules {
			for _, res := range rule.Resources {
				if strings.HasPrefix(res, "certificatesigningrequests") || res == "signers" || res == "persistentvolumes" {
					t.Errorf("%s: ClusterRole %s grants %v on %s, which only an optional controller needs", rbacPath, cr.Name, rule.Verbs, res)
				}
			}
		}
	}
	for path, want := range map[string][]string{
		csrRBACPath:    {"certificatesigningrequests", "certificatesigningrequests/approval", "signers"},
		volumeRBACPath: {"persistentvolumes"},
	} {
		r := loadRBACFile(t, path)
		if len(r.clusterRoles) != 1 || len(r.clusterRoleBindings) != 1 || len(r.roles)+len(r.roleBindings)+len(r.serviceAccounts) != 0 {
			t.Errorf("%s: want one ClusterRole and its binding, got %+v", path, r)
			continue
		}
		var got []string
		for _, rule := range r.clusterRoles[0].Rules {
			got = append(got, rule.Resources...)
			if slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Resources, "*") || slices.Contains(rule.Verbs, "sign") {
				t.Errorf("%s: %+v", path, rule)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s grants %v, want %v", path, got, want)
		}
		b := r.clusterRoleBindings[0]
		if b.RoleRef.Name != r.clusterRoles[0].Name {
			t.Errorf("%s binds %s, not its own role %s", path, b.RoleRef.Name, r.clusterRoles[0].Name)
		}
		for _, s := range []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: harness.PolyccmUser}, {Kind: rbacv1.ServiceAccountKind, Name: "polyccm", Namespace: "kube-system"}} {
			if !hasSubject(b.Subjects, s) {
				t.Errorf("%s does not bind %s %s", path, s.Kind, s.Name)
			}
		}
	}
}

// What only the GCE driver needs, the ConfigMap kube-system/ingress-uid
// (created when absent), is in rbac-gce.yaml, as the chart grants it for
// driver gce only: rbac.yaml alone lets polyccm neither create nor read a
// ConfigMap beyond what every driver needs.
func TestGCERBACIsOptIn(t *testing.T) {
	base := loadRBAC(t)
	for _, ro := range base.roles {
		for _, rule := range ro.Rules {
			if slices.Contains(rule.Resources, "configmaps") {
				t.Errorf("%s: Role %s/%s grants %v on configmaps %v, which only the GCE driver needs", rbacPath, ro.Namespace, ro.Name, rule.Verbs, rule.ResourceNames)
			}
		}
	}
	for _, cr := range base.clusterRoles {
		for _, rule := range cr.Rules {
			if slices.Contains(rule.Resources, "configmaps") {
				t.Errorf("%s: ClusterRole %s grants %v on configmaps", rbacPath, cr.Name, rule.Verbs)
			}
		}
	}

	r := loadRBACFile(t, gceRBACPath)
	if len(r.roles) != 1 || len(r.roleBindings) != 1 || len(r.clusterRoles)+len(r.clusterRoleBindings)+len(r.serviceAccounts) != 0 {
		t.Fatalf("%s: want one Role and its binding, got %+v", gceRBACPath, r)
	}
	ro, b := r.roles[0], r.roleBindings[0]
	var got []string
	for _, rule := range ro.Rules {
		if !slices.Equal(rule.Resources, []string{"configmaps"}) || slices.Contains(rule.Verbs, "*") {
			t.Errorf("%s: %+v", gceRBACPath, rule)
		}
		for _, v := range rule.Verbs {
			got = append(got, v+" "+strings.Join(rule.ResourceNames, ","))
		}
	}
	slices.Sort(got)
	if want := []string{"create ", "get ingress-uid"}; ro.Namespace != "kube-system" || !slices.Equal(got, want) {
		t.Errorf("%s grants %q in %s, want %q in kube-system", gceRBACPath, got, ro.Namespace, want)
	}
	if b.Namespace != ro.Namespace || b.RoleRef.Kind != "Role" || b.RoleRef.Name != ro.Name {
		t.Errorf("%s binds %s %s in %s, not its own role", gceRBACPath, b.RoleRef.Kind, b.RoleRef.Name, b.Namespace)
	}
	for _, s := range []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: harness.PolyccmUser}, {Kind: rbacv1.ServiceAccountKind, Name: "polyccm", Namespace: "kube-system"}} {
		if !hasSubject(b.Subjects, s) {
			t.Errorf("%s does not bind %s %s", gceRBACPath, s.Kind, s.Name)
		}
	}
}
