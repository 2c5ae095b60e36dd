package runner

import (
	"context"
	"github.com/polyccm/polyccm/core/assembly"

	authorizationv1 "k8s.io/api/authorization/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/controllers/nodeipam"
)

// nodeIPAMController runs core/controllers/nodeipam next to the upstream
// controllers, so it shares their leader election, Node informer and
// event recorder, and the node controllers' batched, cached instance
// lookups: a Node initialized a moment ago costs no cloud call.
var nodeIPAMController = app.ControllerInitFuncConstructor{
	InitContext: app.ControllerInitContext{ClientName: "node-ipam-controller"},
	Constructor: func(ic app.ControllerInitContext, cc *cloudcontrollerconfig.CompletedConfig, cp cloudprovider.Interface) app.InitFunc {
		return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			c, ok := cp.(*assembly.Cloud)
			if !ok || c.PodCIDRHint() == "" {
				// Said once, at start; the controller does nothing else.
				klog.InfoS("Controller idle: the driver's instances carry no pod ranges, so Nodes get no pod CIDRs from the cloud", "controller", nodeipam.ControllerName, "driver", cp.ProviderName())
				return nil, false, nil
			}
			kube := cc.ClientBuilder.ClientOrDie(ic.ClientName)
			// rbac.yaml grants these to every polyccm; checked because
			// without them no Node would ever be ready.
			checkAccess(ctx, kube, nodeipam.ControllerName, "system:polyccm", "packaging/kubernetes/rbac.yaml", []authorizationv1.ResourceAttributes{
				{Resource: "nodes", Verb: "watch"},
				{Resource: "nodes", Verb: "patch"},
				{Resource: "nodes", Subresource: "status", Verb: "patch"},
			})
			n, err := nodeipam.New(nodeipam.Options{
				Client:    kube,
				Nodes:     cc.SharedInformers.Core().V1().Nodes(),
				Instances: c.Lookups(),
				Recorder:  cc.EventRecorder,
				Cloud:     c.ProviderName(),
				Hint:      c.PodCIDRHint(),
			})
			if err != nil {
				return nil, false, err
			}
			go n.Run(ctx, 0)
			return nil, true, nil
		}
	},
}
