package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// Apply applies every object of a multi-document YAML (or JSON) manifest, in
// order, with server-side apply (field manager "polyccm-test", conflicts
// forced, as `kubectl apply --server-side --force-conflicts`). Any kind the
// server serves works; kind List is expanded into its items. Namespaced
// objects without a namespace go to "default"; a namespace on a
// cluster-scoped object is dropped. With dryRun the server validates and
// admits each object (DryRun: All) and persists nothing.
//
// Empty documents are skipped. Objects are not reordered: put Namespaces and
// CustomResourceDefinitions before the objects that need them. The first
// failure stops the apply and names the document, kind and name. After a
// Namespace is applied (not dry-run), its "default" ServiceAccount is created
// as kube-controller-manager would, so Pods can be created in it.
func Apply(ctx context.Context, cfg *rest.Config, manifest []byte, dryRun bool) error {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, d := range objs {
		obj := d.obj
		gvk := obj.GroupVersionKind()
		what := fmt.Sprintf("document %d (%s %q)", d.index, gvk.Kind, obj.GetName())
		if gvk.Kind == "" || gvk.Version == "" {
			return fmt.Errorf("%s: apiVersion and kind are required", what)
		}
		if obj.GetName() == "" {
			return fmt.Errorf("%s: metadata.name is required", what)
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			// The kind may have been added by an earlier document (a CRD):
			// rediscover once.
			mapper.Reset()
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return fmt.Errorf("%s: the server does not serve %s: %w", what, gvk, err)
		}
		var ri dynamic.ResourceInterface
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if obj.GetNamespace() == "" {
				obj.SetNamespace("default")
			}
			ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
			what = fmt.Sprintf("document %d (%s %s/%s)", d.index, gvk.Kind, obj.GetNamespace(), obj.GetName())
		} else {
			obj.SetNamespace("")
			ri = dyn.Resource(mapping.Resource)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, opts); err != nil {
			return fmt.Errorf("applying %s: %w", what, err)
		}
		if !dryRun && mapping.Resource == (schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}) {
			if err := ensureDefaultServiceAccounts(ctx, cs, obj.GetName()); err != nil {
				return fmt.Errorf("after applying %s: %w", what, err)
			}
		}
	}
	return nil
}

// ApplyFile applies the manifest in the file at path; see Apply.
func ApplyFile(ctx context.Context, cfg *rest.Config, path string, dryRun bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := Apply(ctx, cfg, data, dryRun); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Apply applies manifest as the cluster admin; see the function Apply.
func (c *Cluster) Apply(ctx context.Context, manifest []byte, dryRun bool) error {
	return Apply(ctx, c.AdminConfig, manifest, dryRun)
}

type manifestObject struct {
	index int // 1-based document number, for messages
	obj   *unstructured.Unstructured
}

// decodeManifest splits a multi-document YAML manifest into objects,
// skipping empty documents and expanding Lists.
func decodeManifest(manifest []byte) ([]manifestObject, error) {
	var out []manifestObject
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for index := 1; ; index++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", index, err)
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		if trimmed := strings.TrimSpace(string(jsonDoc)); trimmed == "null" || trimmed == "{}" || trimmed == "" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(jsonDoc); err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", index, err)
			}
			for i := range list.Items {
				out = append(out, manifestObject{index: index, obj: &list.Items[i]})
			}
			continue
		}
		out = append(out, manifestObject{index: index, obj: obj})
	}
}
