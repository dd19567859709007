//! Users and their passwords. A password is kept only as its SCRAM-SHA-256
//! verifier in PostgreSQL's text form
//! (`SCRAM-SHA-256$<iterations>:<salt>:<StoredKey>:<ServerKey>`, base64
//! fields), never as plaintext; it is persisted with the catalog.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramSecret, SCRAM_ITERATIONS};
use rand::RngCore;

use super::service::Meta;
use super::{MetaError, MetaResult};

/// One user of the catalog.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct UserEntry {
    /// The SCRAM-SHA-256 verifier, if the user has a password.
    pub verifier: Option<String>,
}

/// The SCRAM-SHA-256 verifier of `password` with a fresh random salt.
pub fn scram_verifier(password: &str) -> String {
    let mut salt = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut salt);
    let salted = gen_salted_password(password, &salt, SCRAM_ITERATIONS);
    match ScramSecret::verifier_from_salted_password(salt.to_vec(), salted, SCRAM_ITERATIONS) {
        ScramSecret::Verifier {
            salt,
            iterations,
            stored_key,
            server_key,
        } => format!(
            "SCRAM-SHA-256${iterations}:{}:{}:{}",
            STANDARD.encode(salt),
            STANDARD.encode(stored_key),
            STANDARD.encode(server_key)
        ),
        // verifier_from_salted_password only makes verifiers.
        ScramSecret::SaltedPassword { .. } => String::new(),
    }
}

/// A stored verifier back as pgwire's SCRAM secret (`None` if malformed).
pub fn parse_verifier(v: &str) -> Option<ScramSecret> {
    let rest = v.strip_prefix("SCRAM-SHA-256$")?;
    let (iterations, keys) = rest.split_once(':')?;
    let mut parts = keys.split(':');
    let salt = STANDARD.decode(parts.next()?).ok()?;
    let stored_key = STANDARD.decode(parts.next()?).ok()?;
    let server_key = STANDARD.decode(parts.next()?).ok()?;
    Some(ScramSecret::Verifier {
        salt,
        iterations: iterations.parse().ok()?,
        stored_key,
        server_key,
    })
}

fn no_such_user(name: &str) -> MetaError {
    MetaError::new("42704", format!("role \"{name}\" does not exist"))
}

impl Meta {
    /// `CREATE USER name [WITH PASSWORD '…']`; committed when it returns.
    pub async fn create_user(&self, name: &str, password: Option<&str>) -> MetaResult<()> {
        {
            let mut st = self.state.lock();
            if st.users.contains_key(name) {
                return Err(MetaError::new(
                    "42710",
                    format!("role \"{name}\" already exists"),
                ));
            }
            st.users.insert(
                name.to_owned(),
                UserEntry {
                    verifier: password.map(scram_verifier),
                },
            );
        }
        self.persist_catalog().await?;
        Ok(())
    }

    /// `ALTER USER name [WITH] PASSWORD {'…' | NULL}`.
    pub async fn set_user_password(&self, name: &str, password: Option<&str>) -> MetaResult<()> {
        {
            let mut st = self.state.lock();
            // `root`, the user every fresh server trusts on loopback,
            // exists without being created.
            if name == "root" {
                st.users.entry(name.to_owned()).or_default();
            }
            let user = st.users.get_mut(name).ok_or_else(|| no_such_user(name))?;
            user.verifier = password.map(scram_verifier);
        }
        self.persist_catalog().await?;
        Ok(())
    }

    /// `DROP USER [IF EXISTS] name`.
    pub async fn drop_user(&self, name: &str, if_exists: bool) -> MetaResult<()> {
        let removed = self.state.lock().users.remove(name).is_some();
        if !removed {
            return if if_exists {
                Ok(())
            } else {
                Err(no_such_user(name))
            };
        }
        self.persist_catalog().await?;
        Ok(())
    }

    /// The user's SCRAM verifier: `None` for no such user or no password.
    pub fn user_verifier(&self, name: &str) -> Option<String> {
        self.state
            .lock()
            .users
            .get(name)
            .and_then(|u| u.verifier.clone())
    }

    /// Whether any user has a password.
    pub fn any_password(&self) -> bool {
        self.state
            .lock()
            .users
            .values()
            .any(|u| u.verifier.is_some())
    }

    /// Every user name, sorted.
    pub fn user_names(&self) -> Vec<String> {
        self.state.lock().users.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifier_round_trips_and_hides_the_password() {
        let v = scram_verifier("s3cret");
        assert!(v.starts_with("SCRAM-SHA-256$4096:"), "{v}");
        assert!(!v.contains("s3cret"));
        assert!(matches!(
            parse_verifier(&v),
            Some(ScramSecret::Verifier {
                iterations: 4096,
                ..
            })
        ));
        assert_ne!(v, scram_verifier("s3cret"), "salts are random");
        assert!(parse_verifier("md5abc").is_none());
    }
}
