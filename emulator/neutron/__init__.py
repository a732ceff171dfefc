"""Neutron v2.0: networks, subnets, ports, floating IPs, security groups, tags and quotas."""
