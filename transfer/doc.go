// Package transfer moves trees of files between two directories as one
// stream of entries (wire.TransferChunk): HTCondor's file transfer, for
// jobs that run in their scratch directory with their inputs sent ahead
// and their outputs sent home (should_transfer_files = YES), the
// shadow's copies of a job's checkpoint files, and, as an archive in a
// file (Archive, Extract), a transferred job's scratch directory in its
// checkpoint images.
//
// A Sender walks names under an os.Root and emits, for each file,
// directory and symbolic link, an entry; a file's data follows in chunks
// and its SHA-256 ends it. A Receiver writes the entries under another
// os.Root. The contract, on both sides:
//
//   - Names are confined: every entry name is relative, slash-separated,
//     without "." or ".." elements (a Receiver refuses any other), and is
//     resolved beneath the Receiver's root, which no symbolic link in it
//     can leave (os.Root). The Sender reads beneath its root likewise.
//   - Symbolic links inside the tree are recreated as links, never
//     followed; a link whose target is absolute or climbs out of the
//     tree it is sent in is refused (ErrEscape), on both sides.
//   - A file is written under a temporary name and renamed to its final
//     one once its size and SHA-256 match what the Sender computed while
//     reading it: no partial or corrupt file ever appears under its final
//     name (ErrCorrupt otherwise). Permission bits and modification times
//     are kept. The same holds for a job's inputs and its outputs: the
//     outputs land in a directory the user may be reading, and one rule
//     for both costs little (a rename; creating the file is the cost).
//   - Small files (up to 64 KiB, whole in one chunk) are written several
//     at a time, each worker creating its temporary files in a hidden
//     directory of its own at the top of the Receiver's root and renaming
//     them into place; Close waits for them and removes those
//     directories. A stream that breaks (Abort) leaves whole files and
//     no temporary name.
//   - A Receiver with a Limit refuses the stream once its files hold more
//     bytes than that (ErrTooLarge).
//
// Errors name the file they concern (*FileError).
package transfer
