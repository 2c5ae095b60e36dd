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

	"github.com/polyccm/polyccm/core/controllers/volumelabels"
)

// volumeLabelsController runs core/controllers/volumelabels next to the
// upstream controllers, so it shares their leader election, informers and
// event recorder, with core's batched disk lookups over the driver.
var volumeLabelsController = app.ControllerInitFuncConstructor{
	InitContext: app.ControllerInitContext{ClientName: "volume-labels-controller"},
	Constructor: func(ic app.ControllerInitContext, cc *cloudcontrollerconfig.CompletedConfig, cp cloudprovider.Interface) app.InitFunc {
		return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			c, ok := cp.(*assembly.Cloud)
			if !ok || c.Volumes() == nil {
				// Said once, at start; the controller does nothing else, so
				// turning it on for such a driver is harmless.
				klog.InfoS("Controller idle: the driver cannot look up disks, so PersistentVolumes are not labelled", "controller", volumelabels.ControllerName, "driver", cp.ProviderName())
				return nil, false, nil
			}
			kube := cc.ClientBuilder.ClientOrDie(ic.ClientName)
			checkAccess(ctx, kube, volumelabels.ControllerName, "system:polyccm:volume-labeller", "packaging/kubernetes/rbac-volume-labels.yaml", []authorizationv1.ResourceAttributes{
				{Resource: "persistentvolumes", Verb: "watch"},
				{Resource: "persistentvolumes", Verb: "patch"},
			})
			vl, err := volumelabels.New(volumelabels.Options{
				Client:            kube,
				PersistentVolumes: cc.SharedInformers.Core().V1().PersistentVolumes(),
				Volumes:           c.Volumes(),
				Recorder:          cc.EventRecorder,
			})
			if err != nil {
				return nil, false, err
			}
			go vl.Run(ctx, 0)
			return nil, true, nil
		}
	},
}
