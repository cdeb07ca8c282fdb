//! The keys that sign and verify checkpoints: ed25519 (ed25519-dalek),
//! kept as hex text.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

use super::CheckpointError;

/// The secret key that signs checkpoints. Keep it away from the ledger:
/// whoever holds it can sign a checkpoint of a forged ledger.
pub struct CheckpointKey(SigningKey);

/// The public key that verifies checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointPublicKey(VerifyingKey);

impl std::fmt::Debug for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        write!(f, "CheckpointKey({})", self.public_key().to_hex())
    }
}

/// 32 bytes from hex text (surrounding whitespace ignored).
fn bytes32(text: &str, what: &str) -> Result<[u8; 32], CheckpointError> {
    let bytes = hex::decode(text.trim())
        .map_err(|e| CheckpointError::BadKey(format!("the {what} is not hex: {e}")))?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        CheckpointError::BadKey(format!(
            "the {what} has {} bytes, not 32 ({} hex digits, not 64)",
            b.len(),
            b.len() * 2
        ))
    })
}

impl CheckpointKey {
    /// A new key from the system's random source.
    pub fn generate() -> Result<CheckpointKey, CheckpointError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| CheckpointError::System(format!("no random bytes: {e}")))?;
        Ok(CheckpointKey(SigningKey::from_bytes(&secret)))
    }

    /// The key from its hex text (64 hex digits: the 32-byte secret).
    pub fn from_hex(text: &str) -> Result<CheckpointKey, CheckpointError> {
        Ok(CheckpointKey(SigningKey::from_bytes(&bytes32(
            text,
            "secret key",
        )?)))
    }

    /// The secret as hex text (what a key file holds).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.to_bytes())
    }

    /// Its public key.
    pub fn public_key(&self) -> CheckpointPublicKey {
        CheckpointPublicKey(self.0.verifying_key())
    }

    pub(super) fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }
}

impl CheckpointPublicKey {
    /// The key from its hex text (64 hex digits).
    pub fn from_hex(text: &str) -> Result<CheckpointPublicKey, CheckpointError> {
        VerifyingKey::from_bytes(&bytes32(text, "public key")?)
            .map(CheckpointPublicKey)
            .map_err(|e| CheckpointError::BadKey(format!("not a point of the curve: {e}")))
    }

    /// The key as hex text (what a `.pub` file holds).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.to_bytes())
    }

    /// Checks `signature` of `message` (strict: no malleable signatures,
    /// no weak keys).
    pub(super) fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), CheckpointError> {
        let signature = Signature::from_slice(signature)
            .map_err(|e| CheckpointError::BadSignature(e.to_string()))?;
        self.0
            .verify_strict(message, &signature)
            .map_err(|e| CheckpointError::BadSignature(e.to_string()))
    }
}
