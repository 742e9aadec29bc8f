"""Money on the laptop: billing math (rates), the live meter of one box (clock), the ledger of
sessions (ledger) and which hourly price applies (provider_price)."""
