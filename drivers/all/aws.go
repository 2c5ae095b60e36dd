//go:build !custom || drivers || drivers.aws

package all

import _ "github.com/polyccm/polyccm/drivers/aws" // registers "aws"
