"""The operator's web dashboard: server-rendered pages, guarded actions, no CDN."""
