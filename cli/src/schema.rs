//! `arbor schema --out DIR`: the library writes the JSON Schemas
//! ([`arbor::schema`]); this says where each is.

use arbor::schema::{write_all, FILES};
use arbor::Error;

use crate::args::SchemaArgs;
use crate::stdout;

/// `arbor schema`.
pub fn run(args: &SchemaArgs) -> Result<(), Error> {
    write_all(&args.out)?;
    stdout::print(|out| {
        for file in &FILES {
            writeln!(
                out,
                "{} ({}, {})",
                args.out.join(file.name).display(),
                file.describes,
                file.version
            )?;
        }
        Ok(())
    })
}
