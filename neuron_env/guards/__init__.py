"""The invariants every command relies on, each in one module: the one subprocess funnel
(`proc`), the one writer (`atomic`), the one reader of untrusted files (`files`), bounded HTTP
(`bounded_http`), the ownership rule for trusted paths (`trust`), secret masking (`redact`) and
the one sanitiser of host text (`text`)."""
