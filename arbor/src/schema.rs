//! `arbor schema --out DIR` ([`write_all`]): the JSON Schemas (draft 2020-12) of arbor's
//! machine-readable outputs, generated from the types that write them, so a
//! schema cannot say what the output does not do. The committed copies are
//! docs/schema/ (see its README.md); a test fails when they are stale.
//!
//! Owns the list of schema files and the generator's settings (schemas of
//! what is serialized, not of what could be read). Each schema's `title` is
//! the schema version its output names (`arbor.summary/1`): the version
//! constants live with the types ([`RECORDS_SCHEMA`], [`SUMMARY_SCHEMA`],
//! [`PLAN_SCHEMA`], [`CONVERT_SCHEMA`]). Writes nothing but those files.

use std::fs;
use std::path::Path;

use arbor_runs::record::{RequestRecord, RECORDS_SCHEMA};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};

use arbor_error::Error;
use arbor_formats::write::{Account, CONVERT_SCHEMA};
use arbor_report::plan::{PlanReport, PLAN_SCHEMA};
use arbor_runs::output::{Summary, SUMMARY_SCHEMA};

/// One schema file: its name in the output directory, the output it
/// describes, and the schema version that output names.
pub struct SchemaFile {
    pub name: &'static str,
    pub describes: &'static str,
    pub version: &'static str,
    generate: fn() -> Schema,
}

/// Every schema arbor writes, in a fixed order.
pub const FILES: [SchemaFile; 4] = [
    SchemaFile {
        name: "records.schema.json",
        describes: "one line of records.jsonl",
        version: RECORDS_SCHEMA,
        generate: schema_of::<RequestRecord>,
    },
    SchemaFile {
        name: "summary.schema.json",
        describes: "summary.json",
        version: SUMMARY_SCHEMA,
        generate: schema_of::<Summary>,
    },
    SchemaFile {
        name: "plan.schema.json",
        describes: "arbor plan --json",
        version: PLAN_SCHEMA,
        generate: schema_of::<PlanReport>,
    },
    SchemaFile {
        name: "convert.schema.json",
        describes: "arbor convert --json",
        version: CONVERT_SCHEMA,
        generate: schema_of::<Account>,
    },
];

/// The schema of how `T` is serialized.
fn schema_of<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

impl SchemaFile {
    /// The file's bytes: pretty JSON with a final newline.
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        let mut text = serde_json::to_vec_pretty(&(self.generate)())
            .map_err(|e| Error::other(format!("{}: cannot serialize: {e}", self.name)))?;
        text.push(b'\n');
        Ok(text)
    }
}

/// Writes every file of [`FILES`] into `dir` (created if need be).
pub fn write_all(dir: &Path) -> Result<(), Error> {
    fs::create_dir_all(dir)
        .map_err(|e| Error::input(format!("--out {}: cannot create: {e}", dir.display())))?;
    for file in &FILES {
        let path = dir.join(file.name);
        fs::write(&path, file.to_bytes()?)
            .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_is_titled_with_its_version() {
        for file in &FILES {
            let schema = (file.generate)();
            assert_eq!(
                schema.get("title").and_then(|t| t.as_str()),
                Some(file.version),
                "{}",
                file.name
            );
        }
    }

    #[test]
    fn versioned_outputs_pin_their_version_in_the_schema() {
        for file in &FILES[1..] {
            let schema = (file.generate)();
            let version = schema
                .get("properties")
                .and_then(|p| p.get("schema_version"))
                .and_then(|v| v.get("const"))
                .and_then(|c| c.as_str());
            assert_eq!(version, Some(file.version), "{}", file.name);
        }
    }
}
