"""Device adapters, one package per device family, all behind `gateway.core.adapter.Adapter`."""
