package aws

// Placeholder so the module requires the SDK the fake is tested with;
// replaced by the fake's real tests.
import (
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/credentials"
	_ "github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	_ "github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	_ "github.com/aws/aws-sdk-go-v2/service/ec2"
	_ "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	_ "github.com/aws/aws-sdk-go-v2/service/sts"
)
