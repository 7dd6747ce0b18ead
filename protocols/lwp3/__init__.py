"""LEGO Wireless Protocol 3.0 (Powered Up, BOOST, Technic and City hubs): a pure codec, bytes in and out."""
