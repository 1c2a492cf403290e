-- Tenants (issue 20 "Tenants"): every stored response, conversation and private tool result
-- belongs to the project of the API key that created it. Rows written before keys existed
-- belong to the default project. Lookups match id and project, so another project's id
-- reads exactly as an unknown one.
ALTER TABLE responses ADD COLUMN project TEXT NOT NULL DEFAULT 'default';
ALTER TABLE conversations ADD COLUMN project TEXT NOT NULL DEFAULT 'default';
ALTER TABLE tool_results ADD COLUMN project TEXT NOT NULL DEFAULT 'default';
