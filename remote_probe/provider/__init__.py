"""Which provider rents this box (facts) and what its API says about price and balance (api)."""
