package runner

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/controllers/servingcsr"
)

// servingCSRController runs core/controllers/servingcsr next to the
// upstream controllers, so it shares their leader election, informers and
// (through cloud.InstancesV2) core's batched, cached instance lookups.
var servingCSRController = app.ControllerInitFuncConstructor{
	InitContext: app.ControllerInitContext{ClientName: "kubelet-serving-csr-approver"},
	Constructor: func(ic app.ControllerInitContext, cc *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
		return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			inst, ok := cloud.InstancesV2()
			if !ok {
				// Every polyccm driver has instances; a cloud without them
				// cannot vouch for an address, so the controller stays idle.
				klog.InfoS("Controller not started: the driver has no instances to verify addresses with", "controller", servingcsr.ControllerName, "driver", cloud.ProviderName())
				return nil, false, nil
			}
			kube := cc.ClientBuilder.ClientOrDie(ic.ClientName)
			checkAccess(ctx, kube, servingcsr.ControllerName, "system:polyccm:kubelet-serving-csr-approver", "packaging/kubernetes/rbac-kubelet-serving-csr.yaml", []authorizationv1.ResourceAttributes{
				{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Verb: "watch"},
				{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval", Verb: "update"},
				{Group: "certificates.k8s.io", Resource: "signers", Name: servingcsr.SignerName, Verb: "approve"},
			})
			c, err := servingcsr.New(servingcsr.Options{
				Client:    kube,
				Nodes:     cc.SharedInformers.Core().V1().Nodes(),
				Instances: inst,
				Recorder:  cc.EventRecorder,
				Cloud:     cloud.ProviderName(),
			})
			if err != nil {
				return nil, false, err
			}
			go c.Run(ctx, 0)
			return nil, true, nil
		}
	},
}
