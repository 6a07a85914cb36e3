//! The MC's own Ed25519 key for the viewer tokens of private meetings it mints on
//! request (see [`crate::viewers`]): created on the MC's first start, kept in its
//! data directory.

use std::io::{Read, Write};
use std::path::Path;

use ring::signature::Ed25519KeyPair;

/// The file in the MC's data directory that holds its minting key's seed (0600).
pub const MINTING_KEY_FILE: &str = "viewer_signing_key";

/// The MC's own Ed25519 key for the tokens it mints on request.
pub struct Minter {
    kid: String,
    pair: Ed25519KeyPair,
}

impl std::fmt::Debug for Minter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Minter")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Minter {
    /// The MC's minting key: read from `data_dir/viewer_signing_key`, or created there
    /// (32 random bytes, owner-only) on the first start.
    ///
    /// # Errors
    /// The file cannot be read or written, or holds no key.
    pub fn load_or_create(data_dir: &Path) -> std::io::Result<Self> {
        let path = data_dir.join(MINTING_KEY_FILE);
        let mut seed = [0u8; 32];
        match std::fs::File::open(&path) {
            Ok(mut file) => file.read_exact(&mut seed)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::File::open("/dev/urandom")?.read_exact(&mut seed)?;
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    options.mode(0o600);
                }
                let mut file = options.open(&path)?;
                file.write_all(&seed)?;
                file.sync_all()?;
            }
            Err(e) => return Err(e),
        }
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed)
            .map_err(|_| std::io::Error::other(format!("{} holds no key", path.display())))?;
        let public = ott::ViewerKey::of_pair("", &pair).public_base64url();
        Ok(Self {
            kid: format!("mc-{}", &public[..8]),
            pair,
        })
    }

    /// The public half, as nodes verify with it.
    pub fn public_key(&self) -> ott::ViewerKey {
        ott::ViewerKey::of_pair(&self.kid, &self.pair)
    }

    /// Its key id (`mc-` and the start of the public key).
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// A token for `claims`, signed with this key.
    pub fn mint(&self, claims: &ott::ViewerClaims) -> String {
        ott::mint_viewer_token(claims, &self.kid, &self.pair)
    }
}
