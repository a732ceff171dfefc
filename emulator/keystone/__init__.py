"""Keystone v3: identity, tokens and the service catalog."""
