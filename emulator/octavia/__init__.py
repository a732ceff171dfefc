"""Octavia v2: load balancers, listeners, pools, members, health monitors and their statuses."""
