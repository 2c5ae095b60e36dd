package runner

import (
	"context"
	"fmt"
	"github.com/polyccm/polyccm/core/assembly"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// serviceLBController starts the upstream service controller as upstream
// does, except that its events go through core/loadbalancers.Progress:
// the controller reports a load balancer the cloud is still building as a
// Warning "SyncLoadBalancerFailed" on every retry, which operators read as
// a failure; those become Normal events saying what is being waited for.
var serviceLBController = app.ControllerInitFuncConstructor{
	InitContext: app.ControllerInitContext{ClientName: "service-controller"},
	Constructor: func(ic app.ControllerInitContext, cc *cloudcontrollerconfig.CompletedConfig, cp cloudprovider.Interface) app.InitFunc {
		return func(ctx context.Context, cctx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			c, ok := cp.(*assembly.Cloud)
			if !ok {
				return nil, false, fmt.Errorf("service-lb-controller: unexpected cloud %T", cp)
			}
			sc, err := servicecontroller.New(
				cp,
				c.Progress().Events(cc.ClientBuilder.ClientOrDie(ic.ClientName)),
				cc.SharedInformers.Core().V1().Services(),
				cc.SharedInformers.Core().V1().Nodes(),
				cc.ComponentConfig.KubeCloudShared.ClusterName,
				utilfeature.DefaultFeatureGate,
			)
			if err != nil {
				return nil, false, fmt.Errorf("starting the service controller: %w", err)
			}
			go sc.Run(ctx, int(cc.ComponentConfig.ServiceController.ConcurrentServiceSyncs), cctx.ControllerManagerMetrics)
			for _, t := range c.Tasks() {
				klog.InfoS("Starting driver task", "task", t.Name, "driver", c.ProviderName())
				go t.Run(ctx)
			}
			return nil, true, nil
		}
	},
}
