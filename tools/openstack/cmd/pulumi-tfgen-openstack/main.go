// Command pulumi-tfgen-openstack writes the Pulumi package schema of the OpenStack plugin.
//
//	pulumi-tfgen-openstack schema --out DIR
package main

import (
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfgen"

	"lbreconciler.local/tools/openstack/provider"
)

func main() {
	tfgen.Main("openstack", provider.Version, provider.Provider())
}
