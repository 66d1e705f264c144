//! Whether a manifest or an exit record was written by this user's ppd on this machine.
//!
//! A recording names a program, its arguments and its working directory, and `replay`, `why`
//! and `analyze tasks --rerun` run them; it also says how the run ended. Anyone can write a
//! recording and send it, and a hash only proves that a binary is the one the manifest names,
//! not who named it. So the files whose fields decide what runs and what is answered (each
//! node's `manifest.json`, and the `exit.json` of `ppd record`) carry a MAC: keyed BLAKE3
//! under a key only this user can read, 32 random bytes made on first use in
//! `$XDG_DATA_HOME/ppd/key/key` (`docs/format.md` §2.1 and §8.3). A file is then
//! *authenticated* (its MAC holds under this user's key), *tampered* (it carries a MAC that
//! names this user's key and fails: it was changed since it was written, or forged), or
//! *unauthenticated* (no MAC: an older ppd or written by hand; a MAC under another key:
//! another user or host; or this user has no usable key).
//!
//! The key lives with the user's data, not beside the program-hash cache: a cache may be
//! deleted at any time, and deleting the key would make every recording unauthenticated.

use std::borrow::Cow;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Bytes in a user's key.
pub const KEY_BYTES: usize = 32;
/// The key's file name inside its directory.
pub const KEY_FILE: &str = "key";

/// `$VAR/ppd` if `VAR` is an absolute path, else `<home>/<under_home>/ppd`, the home being
/// `HOME` if it is absolute, else the user's home in the password database (as ssh finds
/// `~/.ssh`): where ppd keeps what belongs to the user rather than to a recording (program
/// hashes under `XDG_CACHE_HOME`, the key under `XDG_DATA_HOME`).
pub fn user_dir(var: &str, under_home: &str) -> Option<PathBuf> {
    let absolute = |p: PathBuf| Some(p).filter(|p| p.is_absolute());
    let from_env = |name: &str| std::env::var_os(name).map(PathBuf::from).and_then(absolute);
    let base = from_env(var).or_else(|| {
        from_env("HOME")
            .or_else(|| {
                nix::unistd::User::from_uid(nix::unistd::geteuid())
                    .ok()
                    .flatten()
                    .and_then(|user| absolute(user.dir))
            })
            .map(|home| home.join(under_home))
    })?;
    Some(base.join("ppd"))
}

/// The directory of this user's key: `$XDG_DATA_HOME/ppd/key`, else
/// `~/.local/share/ppd/key`.
pub fn key_dir() -> Option<PathBuf> {
    user_dir("XDG_DATA_HOME", ".local/share").map(|dir| dir.join("key"))
}

/// Why this user's key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Nowhere to keep it.
    #[error(
        "there is no place for your ppd key: neither XDG_DATA_HOME nor HOME is an absolute path"
    )]
    NoHome,
    /// The key or its directory could be read or replaced by someone else.
    #[error("{path}: {problem}; ppd refuses a key others could read or replace")]
    Unsafe {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// What the operating system refused.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

fn io_error(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> KeyError {
    let path = path.to_owned();
    move |source| KeyError::Io {
        path,
        action,
        source,
    }
}

/// A user's secret key and its public id.
#[derive(Clone)]
pub struct UserKey {
    secret: [u8; KEY_BYTES],
    id: KeyId,
}

impl fmt::Debug for UserKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What a MAC says about the key that made it, without revealing the key: the first 8 bytes
/// of `BLAKE3-derive_key("ppd key id v1", key)`. It tells "changed since you wrote it" from
/// "written under someone else's key".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyId([u8; 8]);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

const KEY_ID_CONTEXT: &str = "ppd key id v1";

impl UserKey {
    fn from_secret(secret: [u8; KEY_BYTES]) -> UserKey {
        let derived = blake3::derive_key(KEY_ID_CONTEXT, &secret);
        let mut id = [0; 8];
        id.copy_from_slice(&derived[..8]);
        UserKey {
            secret,
            id: KeyId(id),
        }
    }

    /// Its public id.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// This user's key, made on first use.
    pub fn load_or_create() -> Result<UserKey, KeyError> {
        UserKey::load_or_create_in(&key_dir().ok_or(KeyError::NoHome)?)
    }

    /// This user's key, if it has been made.
    pub fn load() -> Result<Option<UserKey>, KeyError> {
        UserKey::load_in(&key_dir().ok_or(KeyError::NoHome)?)
    }

    /// The key in `dir`, if there is one. `dir` must be a real directory of the user's that
    /// no one else can enter, the key a regular file of theirs of 32 bytes no one else can
    /// read.
    pub fn load_in(dir: &Path) -> Result<Option<UserKey>, KeyError> {
        match fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(dir, "inspect the key's directory")(e)),
            Ok(meta) => check_private(dir, &meta, "key directory", true)?,
        }
        let path = dir.join(KEY_FILE);
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, "open the key")(e)),
            Ok(file) => file,
        };
        read_key(&path, file).map(Some)
    }

    /// The key in `dir`, made there first if there is none: `dir` is created 0700 (its
    /// parents as the umask says) and the key written under a temporary name, then linked
    /// to `key`, which fails rather than replace a key another process made meanwhile.
    pub fn load_or_create_in(dir: &Path) -> Result<UserKey, KeyError> {
        if let Some(key) = UserKey::load_in(dir)? {
            return Ok(key);
        }
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(io_error(parent, "create the key's directory"))?;
        }
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            // Whatever the umask took away.
            Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(io_error(dir, "make the key's directory private"))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error(dir, "create the key's directory")(e)),
        }
        let meta =
            fs::symlink_metadata(dir).map_err(io_error(dir, "inspect the key's directory"))?;
        check_private(dir, &meta, "key directory", true)?;
        let mut secret = [0; KEY_BYTES];
        File::open("/dev/urandom")
            .and_then(|mut random| random.read_exact(&mut secret))
            .map_err(io_error(Path::new("/dev/urandom"), "make a key"))?;
        let path = dir.join(KEY_FILE);
        let tmp = crate::private::temporary_sibling(&path);
        let write = || -> Result<(), KeyError> {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)
                .map_err(io_error(&tmp, "write a new key"))?;
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .and_then(|()| file.write_all(&secret))
                .and_then(|()| file.sync_all())
                .map_err(io_error(&tmp, "write a new key"))
        };
        let made = write().and_then(|()| match fs::hard_link(&tmp, &path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io_error(&path, "put the new key in place")(e)),
        });
        let _ = fs::remove_file(&tmp);
        if made? {
            Ok(UserKey::from_secret(secret))
        } else {
            // Another process made one first: use it.
            UserKey::load_in(dir)?.ok_or_else(|| KeyError::Io {
                path,
                action: "read the key another process made",
                source: std::io::ErrorKind::NotFound.into(),
            })
        }
    }
}

/// Reads the key from `file`, opened from `path`, checking it on the open descriptor.
fn read_key(path: &Path, mut file: File) -> Result<UserKey, KeyError> {
    let meta = file.metadata().map_err(io_error(path, "inspect the key"))?;
    check_private(path, &meta, "key", false)?;
    if meta.len() != KEY_BYTES as u64 {
        return Err(KeyError::Unsafe {
            path: path.to_owned(),
            problem: format!(
                "the key holds {} bytes, not {KEY_BYTES}: it is not a ppd key (move it away \
                 and a new one is made, which makes your earlier recordings unauthenticated)",
                meta.len()
            ),
        });
    }
    let mut secret = [0; KEY_BYTES];
    file.read_exact(&mut secret)
        .map_err(io_error(path, "read the key"))?;
    Ok(UserKey::from_secret(secret))
}

/// `meta` (of `path`, a `what`) is a real directory (or regular file) of the invoking user
/// that nobody else may read, enter or write.
fn check_private(path: &Path, meta: &fs::Metadata, what: &str, dir: bool) -> Result<(), KeyError> {
    let me = nix::unistd::geteuid().as_raw();
    let kind = meta.file_type();
    let problem = if dir && !kind.is_dir() {
        Some(format!("the {what} is not a directory"))
    } else if !dir && !kind.is_file() {
        Some(format!("the {what} is not a regular file"))
    } else if meta.uid() != me {
        Some(format!(
            "the {what} belongs to user {}, not to you (user {me})",
            meta.uid()
        ))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!(
            "others have access to the {what} (mode {:o}; fix with chmod {})",
            meta.mode() & 0o7777,
            if dir { "700" } else { "600" }
        ))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(KeyError::Unsafe {
            path: path.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

/// This user's key as a reader finds it.
#[derive(Debug)]
pub enum ReaderKey {
    /// There, and private.
    Usable(UserKey),
    /// Not made yet (nothing was written by this user's ppd), or no place for one.
    Absent,
    /// There, but not to be trusted or not readable: why.
    Refused(String),
}

impl ReaderKey {
    /// This user's key; a reader never makes one.
    pub fn of_user() -> ReaderKey {
        match UserKey::load() {
            Ok(Some(key)) => ReaderKey::Usable(key),
            Ok(None) | Err(KeyError::NoHome) => ReaderKey::Absent,
            Err(e) => ReaderKey::Refused(e.to_string()),
        }
    }

    /// The key in `dir`.
    pub fn in_dir(dir: &Path) -> ReaderKey {
        match UserKey::load_in(dir) {
            Ok(Some(key)) => ReaderKey::Usable(key),
            Ok(None) => ReaderKey::Absent,
            Err(e) => ReaderKey::Refused(e.to_string()),
        }
    }
}

/// Which file a MAC is for. Each has its own derived key, so a MAC taken from one kind of file
/// proves nothing about another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedFile {
    /// A node's `manifest.json`.
    Manifest,
    /// `ppd record`'s `exit.json`.
    ProgramExit,
}

impl SealedFile {
    /// The BLAKE3 `derive_key` context of the file's MAC key.
    fn context(self) -> &'static str {
        match self {
            SealedFile::Manifest => "ppd manifest.json MAC v1",
            SealedFile::ProgramExit => "ppd exit.json MAC v1",
        }
    }

    fn tag(self, key: &UserKey, content: &[u8]) -> blake3::Hash {
        let mac_key = blake3::derive_key(self.context(), &key.secret);
        blake3::keyed_hash(&mac_key, content)
    }
}

/// What opens a MAC member: the last member of the top-level object, exactly
/// `,\n  "mac": "ppd-mac-v1:KEYID:TAG"\n}` at the end of the file.
const TRAILER_HEAD: &[u8] = b",\n  \"mac\": \"ppd-mac-v1:";
const TRAILER_TAIL: &[u8] = b"\"\n}";
/// The end of the JSON text a MAC covers, which the MAC member replaces.
const UNSEALED_END: &[u8] = b"\n}";
const TRAILER_LEN: usize = TRAILER_HEAD.len() + 16 + 1 + 64 + TRAILER_TAIL.len();

/// `value` as pretty-printed JSON, with a MAC under `key` as its last member when a key is
/// given. Without a key, or for a value that is not a JSON object with members, the JSON is
/// written unsealed, and reads as unauthenticated.
pub fn sealed_json(value: &impl Serialize, file: SealedFile, key: Option<&UserKey>) -> Vec<u8> {
    let json = serde_json::to_vec_pretty(value).expect("ppd's own records always serialize");
    match key {
        Some(key) => seal(file, json, key),
        None => json,
    }
}

/// `json` (pretty-printed, ending in `\n}`) with its MAC under `key` as the last member.
fn seal(file: SealedFile, mut json: Vec<u8>, key: &UserKey) -> Vec<u8> {
    if !json.ends_with(UNSEALED_END) || !json.starts_with(b"{\n") {
        return json;
    }
    let tag = file.tag(key, &json);
    json.truncate(json.len() - UNSEALED_END.len());
    json.extend_from_slice(TRAILER_HEAD);
    json.extend_from_slice(format!("{}:{}", key.id, tag.to_hex()).as_bytes());
    json.extend_from_slice(TRAILER_TAIL);
    json
}

/// Whether a file was written by this user's ppd here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Authenticity {
    /// Its MAC holds under this user's key.
    Authenticated,
    /// It carries a MAC naming this user's key that fails, or a MAC ppd does not write: it was
    /// changed since it was written, or not written by this user here.
    Tampered {
        /// What failed.
        detail: String,
    },
    /// Nothing says this user's ppd wrote it.
    Unauthenticated {
        /// Why not.
        why: Unsealed,
        /// The same, for people.
        detail: String,
    },
}

/// Why a file is unauthenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unsealed {
    /// It carries no MAC: written by a ppd older than MACs, or by hand, or elsewhere.
    NoMac,
    /// Its MAC is under another key: another user's, another host's, or a key of this user's
    /// that was replaced.
    OtherKey,
    /// This user has no key to check it with.
    NoKey,
    /// This user's key is refused.
    KeyRefused,
    /// The file changed while the recording was read (it is still being recorded, or was
    /// replaced): what was read is not what was checked.
    Changed,
}

impl Authenticity {
    /// Whether this user's ppd wrote it here, unchanged.
    pub fn is_authenticated(&self) -> bool {
        matches!(self, Authenticity::Authenticated)
    }

    /// Whether it carries a MAC that fails.
    pub fn is_tampered(&self) -> bool {
        matches!(self, Authenticity::Tampered { .. })
    }

    /// Unauthenticated, for `why`, as `detail` says.
    pub fn unauthenticated(why: Unsealed, detail: String) -> Authenticity {
        Authenticity::Unauthenticated { why, detail }
    }
}

impl fmt::Display for Authenticity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Authenticity::Authenticated => f.write_str("written by you here"),
            Authenticity::Tampered { detail } => write!(f, "tampered: {detail}"),
            Authenticity::Unauthenticated { detail, .. } => {
                write!(f, "not written by you here: {detail}")
            }
        }
    }
}

/// The bytes a file's MAC covers, and whether the MAC holds under `key`. The content of an
/// authenticated file is exactly what was sealed; a reader parses that, never the bytes around
/// it.
pub fn unseal<'a>(
    file: SealedFile,
    bytes: &'a [u8],
    key: &ReaderKey,
) -> (Authenticity, Cow<'a, [u8]>) {
    let Some((key_id, tag, content)) = split_trailer(bytes) else {
        let auth = if has_mac_member(bytes) {
            Authenticity::Tampered {
                detail: "it carries a MAC that is not where ppd writes one (the file was \
                         rewritten since)"
                    .into(),
            }
        } else {
            Authenticity::unauthenticated(
                Unsealed::NoMac,
                "it carries no MAC (written by an older ppd, by hand, or elsewhere)".into(),
            )
        };
        return (auth, Cow::Borrowed(bytes));
    };
    let auth = match key {
        ReaderKey::Absent => Authenticity::unauthenticated(
            Unsealed::NoKey,
            format!("its MAC is under key {key_id}, and you have no ppd key here"),
        ),
        ReaderKey::Refused(why) => Authenticity::unauthenticated(
            Unsealed::KeyRefused,
            format!("its MAC cannot be checked: {why}"),
        ),
        ReaderKey::Usable(mine) if mine.id.to_string() != key_id => Authenticity::unauthenticated(
            Unsealed::OtherKey,
            format!(
                "its MAC is under another ppd key ({key_id}: another user's or host's), \
                     not yours ({})",
                mine.id
            ),
        ),
        ReaderKey::Usable(mine) => match blake3::Hash::from_hex(tag) {
            Ok(tag) if file.tag(mine, &content) == tag => Authenticity::Authenticated,
            _ => Authenticity::Tampered {
                detail: "its MAC fails under your key: changed since it was written, or not \
                         written by you here"
                    .into(),
            },
        },
    };
    (auth, Cow::Owned(content))
}

/// A file ending in the MAC member: the key id, the tag (hex, unchecked) and the content it
/// covers (the file without the member, ending in `\n}` again).
fn split_trailer(bytes: &[u8]) -> Option<(&str, &str, Vec<u8>)> {
    let start = bytes.len().checked_sub(TRAILER_LEN)?;
    let trailer = bytes[start..]
        .strip_prefix(TRAILER_HEAD)?
        .strip_suffix(TRAILER_TAIL)?;
    let text = std::str::from_utf8(trailer).ok()?;
    let (key_id, tag) = text.split_once(':')?;
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !hex(key_id, 16) || !hex(tag, 64) {
        return None;
    }
    let mut content = bytes[..start].to_vec();
    content.extend_from_slice(UNSEALED_END);
    Some((key_id, tag, content))
}

/// Whether the JSON object in `bytes` has a top-level `mac` member.
fn has_mac_member(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Mac {
        mac: Option<serde::de::IgnoredAny>,
    }
    match serde_json::from_slice::<Mac>(bytes) {
        Ok(m) => m.mac.is_some(),
        // Not an object, or a `mac` given twice: either way not what ppd writes. Invalid JSON
        // fails again, with its position, where the file is parsed.
        Err(e) => e.is_data(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Record {
        exit_code: i32,
        argv: Vec<String>,
    }

    fn record(code: i32) -> Record {
        Record {
            exit_code: code,
            argv: vec!["bank".into(), "3".into()],
        }
    }

    fn key_in(dir: &Path) -> UserKey {
        UserKey::load_or_create_in(&dir.join("ppd/key")).unwrap()
    }

    #[test]
    fn a_sealed_file_is_authenticated_and_its_content_is_the_unsealed_json() {
        let tmp = tempfile::tempdir().unwrap();
        let key = key_in(tmp.path());
        let sealed = sealed_json(&record(0), SealedFile::Manifest, Some(&key));
        let plain = serde_json::to_vec_pretty(&record(0)).unwrap();
        let (auth, content) = unseal(SealedFile::Manifest, &sealed, &ReaderKey::Usable(key));
        assert_eq!(auth, Authenticity::Authenticated);
        assert_eq!(&*content, &plain[..]);
        // Still JSON, with the MAC as its last member.
        let value: serde_json::Value = serde_json::from_slice(&sealed).unwrap();
        assert!(value["mac"].as_str().unwrap().starts_with("ppd-mac-v1:"));
        assert!(sealed.ends_with(b"\"\n}"));
    }

    #[test]
    fn any_changed_byte_is_tampering() {
        let tmp = tempfile::tempdir().unwrap();
        let key = key_in(tmp.path());
        let sealed = sealed_json(&record(0), SealedFile::Manifest, Some(&key));
        let reader = ReaderKey::Usable(key);
        for i in 0..sealed.len() {
            let mut edited = sealed.clone();
            edited[i] ^= 0x01;
            let (auth, _) = unseal(SealedFile::Manifest, &edited, &reader);
            assert!(
                !auth.is_authenticated(),
                "byte {i} changed, still authenticated"
            );
        }
        let edited = String::from_utf8(sealed)
            .unwrap()
            .replace("\"exit_code\": 0", "\"exit_code\": 3");
        let (auth, _) = unseal(SealedFile::Manifest, edited.as_bytes(), &reader);
        assert!(auth.is_tampered(), "{auth:?}");
    }

    #[test]
    fn a_mac_for_one_kind_of_file_does_not_hold_for_another() {
        let tmp = tempfile::tempdir().unwrap();
        let key = key_in(tmp.path());
        let sealed = sealed_json(&record(0), SealedFile::ProgramExit, Some(&key));
        let (auth, _) = unseal(SealedFile::Manifest, &sealed, &ReaderKey::Usable(key));
        assert!(auth.is_tampered(), "{auth:?}");
    }

    #[test]
    fn another_key_no_mac_and_no_key_are_unauthenticated_and_a_moved_mac_is_tampering() {
        let tmp = tempfile::tempdir().unwrap();
        let mine = key_in(&tmp.path().join("me"));
        let theirs = key_in(&tmp.path().join("them"));
        assert_ne!(mine.id(), theirs.id());
        let sealed = sealed_json(&record(0), SealedFile::Manifest, Some(&theirs));
        let why = |bytes: &[u8], key: &ReaderKey| match unseal(SealedFile::Manifest, bytes, key).0 {
            Authenticity::Unauthenticated { why, .. } => Some(why),
            _ => None,
        };
        let reader = ReaderKey::Usable(mine);
        assert_eq!(why(&sealed, &reader), Some(Unsealed::OtherKey));
        assert_eq!(why(&sealed, &ReaderKey::Absent), Some(Unsealed::NoKey));
        assert_eq!(
            why(&sealed, &ReaderKey::Refused("mode 644".into())),
            Some(Unsealed::KeyRefused)
        );
        let plain = sealed_json(&record(0), SealedFile::Manifest, None);
        assert_eq!(why(&plain, &reader), Some(Unsealed::NoMac));
        // The same members, re-indented by another tool: the MAC is no longer at the end.
        let value: serde_json::Value = serde_json::from_slice(&sealed).unwrap();
        let rewritten = serde_json::to_vec(&value).unwrap();
        let (auth, _) = unseal(SealedFile::Manifest, &rewritten, &reader);
        assert!(auth.is_tampered(), "{auth:?}");
    }

    #[test]
    fn the_key_is_made_once_private_and_shared_by_every_process_that_asks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("share/ppd/key");
        assert!(UserKey::load_in(&dir).unwrap().is_none());
        let keys: Vec<UserKey> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| UserKey::load_or_create_in(&dir).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| k.secret == keys[0].secret));
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        let again = UserKey::load_in(&dir).unwrap().unwrap();
        assert_eq!(again.id(), keys[0].id());
    }

    #[test]
    fn a_key_others_can_read_or_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ppd/key");
        UserKey::load_or_create_in(&dir).unwrap();
        let key = dir.join(KEY_FILE);
        fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
        let err = UserKey::load_or_create_in(&dir).unwrap_err().to_string();
        assert!(
            err.contains("others have access to the key (mode 644"),
            "{err}"
        );
        assert!(matches!(ReaderKey::in_dir(&dir), ReaderKey::Refused(_)));
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let err = UserKey::load_in(&dir).unwrap_err().to_string();
        assert!(
            err.contains("others have access to the key directory"),
            "{err}"
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        // A link in place of the key is not followed.
        fs::rename(&key, tmp.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &key).unwrap();
        let err = UserKey::load_in(&dir).unwrap_err().to_string();
        assert!(err.contains("open the key"), "{err}");
        // A file of the wrong size is not a key.
        fs::remove_file(&key).unwrap();
        crate::private::write_atomic(&key, b"short", false).unwrap();
        let err = UserKey::load_in(&dir).unwrap_err().to_string();
        assert!(err.contains("holds 5 bytes"), "{err}");
    }
}
