"""Device adapters, one package per device family, all behind `devices.base.Adapter`."""
