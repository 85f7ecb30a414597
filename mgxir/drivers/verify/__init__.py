"""mgx-verify as library code: `tasks` (one input on one target), `executors` (inline, process,
ray), `cache` (results by content fingerprint), `report` (JSON, the table, HTML) and `driver`
(the command)."""
