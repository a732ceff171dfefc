// Package provider describes how the Terraform OpenStack provider is presented to Pulumi.
//
// The type tokens and property names must be the ones the pulumi-openstack SDKs (PyPI
// `pulumi-openstack` 5.5.x) send, so that `pulumi_openstack` programs drive this plugin unchanged.
// Resources this project declares are mapped explicitly; every other Terraform resource and data
// source gets a token from a mechanical rule, so the plugin still serves the whole provider.
package provider

import (
	"unicode"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge/tokens"
	shimv2 "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfshim/sdk-v2"
	ptokens "github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/terraform-provider-openstack/terraform-provider-openstack/v3/openstack"
)

const pkg = "openstack"

// Version is set at link time (-X) to the pulumi-openstack release this plugin stands in for.
var Version = "0.0.0-dev"

// resources maps Terraform resource names to the SDK's (module, type) pairs.
var resources = map[string][2]string{
	"openstack_lb_loadbalancer_v2":                    {"loadbalancer", "LoadBalancer"},
	"openstack_lb_listener_v2":                        {"loadbalancer", "Listener"},
	"openstack_lb_pool_v2":                            {"loadbalancer", "Pool"},
	"openstack_lb_member_v2":                          {"loadbalancer", "Member"},
	"openstack_lb_members_v2":                         {"loadbalancer", "Members"},
	"openstack_lb_monitor_v2":                         {"loadbalancer", "Monitor"},
	"openstack_lb_quota_v2":                           {"loadbalancer", "Quota"},
	"openstack_lb_l7policy_v2":                        {"loadbalancer", "L7PolicyV2"},
	"openstack_lb_l7rule_v2":                          {"loadbalancer", "L7RuleV2"},
	"openstack_networking_floatingip_v2":              {"networking", "FloatingIp"},
	"openstack_networking_floatingip_associate_v2":    {"networking", "FloatingIpAssociate"},
	"openstack_networking_network_v2":                 {"networking", "Network"},
	"openstack_networking_subnet_v2":                  {"networking", "Subnet"},
	"openstack_networking_port_v2":                    {"networking", "Port"},
	"openstack_networking_router_v2":                  {"networking", "Router"},
	"openstack_networking_router_interface_v2":        {"networking", "RouterInterface"},
	"openstack_networking_secgroup_v2":                {"networking", "SecGroup"},
	"openstack_networking_secgroup_rule_v2":           {"networking", "SecGroupRule"},
	"openstack_networking_port_secgroup_associate_v2": {"networking", "PortSecGroupAssociate"},
}

// dataSources maps Terraform data source names to the SDK's (module, function) pairs.
var dataSources = map[string][2]string{
	"openstack_lb_loadbalancer_v2":       {"loadbalancer", "getLoadbalancerV2"},
	"openstack_lb_listener_v2":           {"loadbalancer", "getListenerV2"},
	"openstack_lb_pool_v2":               {"loadbalancer", "getPoolV2"},
	"openstack_networking_network_v2":    {"networking", "getNetwork"},
	"openstack_networking_subnet_v2":     {"networking", "getSubnet"},
	"openstack_networking_port_v2":       {"networking", "getPort"},
	"openstack_networking_floatingip_v2": {"networking", "getFloatingIp"},
	"openstack_networking_secgroup_v2":   {"networking", "getSecGroup"},
}

// typeToken builds "openstack:<module>/<camelName>:<Name>" as the SDKs spell type tokens.
func typeToken(mod, name string) string {
	return pkg + ":" + mod + "/" + lowerFirst(name) + ":" + name
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// Provider returns the bridge description of the OpenStack provider.
func Provider() tfbridge.ProviderInfo {
	envDefault := func(vars ...string) *tfbridge.SchemaInfo {
		return &tfbridge.SchemaInfo{Default: &tfbridge.DefaultInfo{EnvVars: vars}}
	}
	info := tfbridge.ProviderInfo{
		P:                       shimv2.NewProvider(openstack.Provider()),
		Name:                    pkg,
		Description:             "Pulumi resource plugin for OpenStack, bridged from the Terraform OpenStack provider.",
		Keywords:                []string{"pulumi", "openstack"},
		License:                 "Apache-2.0",
		GitHubOrg:               "terraform-provider-openstack",
		TFProviderModuleVersion: "v3",
		Version:                 Version,
		Config: map[string]*tfbridge.SchemaInfo{
			"region":        envDefault("OS_REGION_NAME"),
			"insecure":      envDefault("OS_INSECURE"),
			"endpoint_type": envDefault("OS_ENDPOINT_TYPE"),
			"cloud":         envDefault("OS_CLOUD"),
		},
		Resources:   map[string]*tfbridge.ResourceInfo{},
		DataSources: map[string]*tfbridge.DataSourceInfo{},
	}
	for tf, m := range resources {
		info.Resources[tf] = &tfbridge.ResourceInfo{Tok: ptokens.Type(typeToken(m[0], m[1]))}
	}
	for tf, m := range dataSources {
		info.DataSources[tf] = &tfbridge.DataSourceInfo{Tok: ptokens.ModuleMember(typeToken(m[0], m[1]))}
	}
	// Everything not named above: openstack_<rest> -> openstack:index/<rest in camel case>.
	info.MustComputeTokens(tokens.SingleModule("openstack_", "index", tokens.MakeStandard(pkg)))
	info.SetAutonaming(255, "-")
	return info
}
