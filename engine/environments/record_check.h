// Verifying an installed environment before it is published: every distribution's RECORD (the
// wheel spec's list of its files, each "path,algorithm=urlsafe-base64-digest-without-padding,size")
// against what is in the target directory.
//   - each file a RECORD lists with a hash must be there, a regular file, of that size and digest
//     (sha256, sha384 or sha512; anything else is refused as unverifiable);
//   - every file in the target must be listed by some RECORD, except what installers generate
//     themselves: bytecode in __pycache__ of a listed source file, the top-level ".lock" uv
//     leaves, and INSTALLER, REQUESTED, direct_url.json, uv_cache.json, uv_build.json in a
//     .dist-info directory (uv and pip list these too, with hashes; some versions do not).
// A RECORD path that leaves the target (pip --target lists scripts as "../../bin/NAME", from the
// lib/python it installed into before moving everything up) is checked at the place it was moved
// to: its leading ".." components dropped. Entries without a hash (RECORD itself, pip's bytecode)
// are listed but not checked.
// The target was written by the installer's uid: nothing is followed (no symlink, RESOLVE_BENEATH),
// nothing but regular files is read, and a RECORD is read up to 64 MiB.
// Blocking (hashes every file): worker threads only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace engine::deps {

// urlsafe base64 without padding of `algorithm`'s digest of `data`, as RECORD has it; "" for an
// algorithm other than sha256, sha384, sha512.
std::string record_digest(std::string_view algorithm, std::string_view data);

// One RECORD line's fields (CSV: quoted fields, "" for a quote inside one).
std::vector<std::string> record_fields(std::string_view line);

struct RecordCheck {
  std::size_t distributions = 0;  // .dist-info directories
  std::size_t files = 0;          // files verified against a digest
  // "<distribution>: <file>: <what>" for a listed file that is missing, different or unverifiable;
  // "<file>: listed by no RECORD" for an extra file. In the order found, bounded.
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
  // One message naming the first problems, for install_failed.
  std::string describe() const;
};

RecordCheck check_records(const std::string& target);

}  // namespace engine::deps
