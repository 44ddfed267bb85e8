-- Which provider drives an operation (issue 11): the generic HTTP provider built from the
-- stored provider file ('http', every operation recorded before this version), or a code
-- provider, a plug-in named by `provider` ('code'), with the plug-in's version when the
-- operation was submitted. A worker claims a code operation only when it has that plug-in:
-- the claim filters on these columns while still walking the operations_due index.
ALTER TABLE operations ADD COLUMN provider_kind text NOT NULL DEFAULT 'http'
    CHECK (provider_kind IN ('http', 'code'));
ALTER TABLE operations ADD COLUMN provider_version text;
