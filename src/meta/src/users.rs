//! Users and their passwords. A password is kept only as its SCRAM-SHA-256
//! verifier in PostgreSQL's text form
//! (`SCRAM-SHA-256$<iterations>:<salt>:<StoredKey>:<ServerKey>`, base64
//! fields), never as plaintext; it is persisted with the catalog.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ebbflow_common::ErrorKind;
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

fn no_such_user(name: &str) -> MetaError {
    MetaError::new(
        ErrorKind::UndefinedObject,
        format!("role \"{name}\" does not exist"),
    )
}

impl Meta {
    /// `CREATE USER name [WITH PASSWORD '…']`; committed when it returns.
    pub async fn create_user(&self, name: &str, password: Option<&str>) -> MetaResult<()> {
        {
            let mut st = self.state.lock();
            if st.users.contains_key(name) {
                return Err(MetaError::new(
                    ErrorKind::DuplicateObject,
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
    fn verifier_has_postgresql_form_and_hides_the_password() {
        let v = scram_verifier("s3cret");
        assert!(v.starts_with("SCRAM-SHA-256$4096:"), "{v}");
        assert!(!v.contains("s3cret"));
        // Salt, StoredKey and ServerKey: 16 and 32 bytes in base64.
        let fields: Vec<&str> = v.split(':').skip(1).collect();
        let lens: Vec<usize> = fields
            .iter()
            .map(|f| STANDARD.decode(f).map_or(0, |b| b.len()))
            .collect();
        assert_eq!(lens, vec![16, 32, 32], "{v}");
        assert_ne!(v, scram_verifier("s3cret"), "salts are random");
    }
}
