// Package imagecache keeps the container images of an execute machine's
// jobs: a content-addressed store shared by every job, in which each
// layer is fetched, verified and unpacked once.
//
// A Cache lives in one directory:
//
//	layers/<diffid hex>/fs    a layer's files, ready to be a lower directory of an overlay
//	layers/<diffid hex>/size  the bytes its files take
//	images/<config hex>.json  an image: its layers, bottom first, its configuration, the names it was pulled as
//	images/<config hex>.lock  held shared by every job using the image
//	locks/<diffid hex>        held while a layer is unpacked or removed
//	tmp/<diffid hex>          a layer being unpacked
//	cache.lock                held while images are recorded or evicted
//
// Contracts:
//
//   - A layer is verified before it is used: its uncompressed stream must
//     hash to the diff ID in the image's configuration, and a layer that
//     does not is never renamed into layers/.
//   - Concurrent pulls of the same image, in one process or several
//     (every starter is its own process), unpack each layer once: the
//     others wait on the layer's lock and find it done.
//   - A pull that dies half-way leaves at most tmp/<diffid>; the next pull
//     of that layer removes it. A layer appears in layers/ only complete
//     and on disk (synced, then renamed).
//   - Unpacking runs as root but nothing of the image leaves its layer's
//     directory: paths are resolved beneath it without following symbolic
//     links, device nodes and FIFOs are dropped, setuid and setgid bits
//     are stripped. Whiteouts become overlayfs whiteouts.
//   - An Image holds a shared lock until Release, so an image a job uses
//     is never evicted; a job whose process dies releases it with the
//     process. Eviction removes the least recently used unlocked images
//     until the cache is within its size cap, then the layers no image
//     still names.
//
// Images come from an OCI image layout directory, a docker-save tarball,
// or a registry through go-containerregistry's remote package, over HTTPS
// only, with the certificate authorities and the credentials Registries
// gives (credentials are never written down). Names lists the names of
// the images the cache holds, for the machine to advertise.
package imagecache
