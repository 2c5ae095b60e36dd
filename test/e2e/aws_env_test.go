//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/polyccm/polyccm/test/simcloud"

	"github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/harness"
)

const (
	awsAccessKey = "AKIAE2ETESTKEY000001"
	awsSecretKey = "e2eSecretKey/ShouldNeverBeLogged+0123456"
)

// awsEnv is one polyccm with the AWS driver against a fresh simulated AWS
// account (simcloud, on its realistic profile), with static keys given as
// polyccm secrets. The cluster's VPC has
// a tagged public subnet in two zones (routed to an internet gateway) and
// a tagged route table.
type awsEnv struct {
	*env
	acct    *simcloud.AWSAccount
	fake    *fakeaws.Server
	vpc     fakeaws.VPC
	subnets map[string]fakeaws.Subnet // by zone
	table   fakeaws.RouteTable
}

func newAWSEnv(t *testing.T, tweak func(*harness.Settings)) *awsEnv {
	t.Helper()
	e := &awsEnv{env: newEnv(t), subnets: map[string]fakeaws.Subnet{}}
	e.secret = awsSecretKey
	acct, err := simcloud.StartAWS(simcloud.Options{ClusterName: "e2e"}, "eu-west-1", awsAccessKey, awsSecretKey)
	if err != nil {
		t.Fatal(err)
	}
	e.acct, e.fake = acct, acct.Fake
	e.closer = append(e.closer, e.fake.Close)
	owned := map[string]string{aws.TagClusterPrefix + "e2e": aws.TagOwned}
	e.vpc = e.fake.AddVPC(fakeaws.VPC{CIDRBlock: "10.0.0.0/16", Tags: owned})
	for _, z := range []string{"eu-west-1a", "eu-west-1b"} {
		e.subnets[z] = e.fake.AddSubnet(fakeaws.Subnet{
			VPCID: e.vpc.ID, AvailabilityZone: z, MapPublicIPOnLaunch: true,
			Tags: map[string]string{aws.TagClusterPrefix + "e2e": aws.TagShared, aws.TagRoleELB: "1", "Name": "public-" + z},
		})
	}
	e.table = e.fake.AddRouteTable(fakeaws.RouteTable{VPCID: e.vpc.ID, Tags: owned})
	// The subnets are public: their route table leads to the internet
	// gateway, which internet-facing load balancers need.
	igw := e.fake.AddInternetGateway(e.vpc.ID, nil)
	public := fakeaws.RouteTable{VPCID: e.vpc.ID, Routes: []fakeaws.Route{{DestinationCIDRBlock: "0.0.0.0/0", GatewayID: igw.ID}}}
	for _, z := range []string{"eu-west-1a", "eu-west-1b"} {
		public.Associations = append(public.Associations, fakeaws.RouteTableAssociation{SubnetID: e.subnets[z].ID})
	}
	e.fake.AddRouteTable(public)

	block, err := acct.Config(e.dir, e.vpc.ID)
	if err != nil {
		t.Fatal(err)
	}
	// These tests predate Classic Load Balancers and mean NLBs; the
	// Classic test asks for its kind by annotation.
	block += "\nloadBalancer:\n  defaultType: nlb"
	s := harness.Settings{Driver: "aws", DriverBlock: block}
	if tweak != nil {
		tweak(&s)
	}
	// Nothing from this machine's AWS setup may leak into the test.
	e.run(s, acct.Env(e.dir))
	return e
}

// instance adds a running instance for node i in zone; its private DNS
// name is the node name.
func (e *awsEnv) instance(i int, zone string) fakeaws.Instance {
	return e.fake.AddInstance(fakeaws.Instance{
		SubnetID:       e.subnets[zone].ID,
		InstanceType:   "m6i.large",
		PrivateDNSName: e.nodeName(i) + ".ec2.internal", // fits the 63-byte hostname label
	})
}

func (e *awsEnv) providerID(in fakeaws.Instance) string {
	return aws.ProviderID(in.AvailabilityZone, in.ID)
}

// calls sums polyccm's calls of the actions whose name contains part.
func (e *awsEnv) calls(part string) int {
	n := 0
	for ep, c := range e.fake.Faults().Calls() {
		if strings.Contains(ep, part) {
			n += c
		}
	}
	return n
}
