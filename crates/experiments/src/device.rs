//! Per-device tables and the serde form of [`DeviceType`] (whose own derive only
//! deserializes): device types appear in JSON by their stable names (`smart_tv`).

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use shed::DeviceType;

/// One value per device type, indexed by discriminant: O(1), no allocation, and
/// serialized as a map from device name to value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerDevice<T>(pub [T; DeviceType::COUNT]);

impl<T> PerDevice<T> {
    /// The value of one device type.
    pub fn get(&self, device: DeviceType) -> &T {
        &self.0[device as usize]
    }

    /// The value of one device type, mutably.
    pub fn get_mut(&mut self, device: DeviceType) -> &mut T {
        &mut self.0[device as usize]
    }

    /// Every device type with its value, in [`DeviceType::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (DeviceType, &T)> {
        DeviceType::ALL.into_iter().zip(self.0.iter())
    }
}

impl<T: Serialize> Serialize for PerDevice<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(DeviceType::COUNT))?;
        for (device, value) in self.iter() {
            map.serialize_entry(device.as_str(), value)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for PerDevice<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for V<T> {
            type Value = PerDevice<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map from device type to value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = PerDevice::<T>::default();
                while let Some(name) = map.next_key::<String>()? {
                    let device = DeviceType::from_name(&name).ok_or_else(|| {
                        de::Error::custom(format_args!("unknown device type {name:?}"))
                    })?;
                    *out.get_mut(device) = map.next_value()?;
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(V(std::marker::PhantomData))
    }
}

/// `#[serde(with = "crate::device::name")]` for a single [`DeviceType`] field.
pub mod name {
    use super::*;

    /// Write the device type's stable name.
    pub fn serialize<S: Serializer>(device: &DeviceType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(device.as_str())
    }

    /// Read a device type from its stable name.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DeviceType, D::Error> {
        let name = String::deserialize(d)?;
        DeviceType::from_name(&name)
            .ok_or_else(|| de::Error::custom(format_args!("unknown device type {name:?}")))
    }
}

/// `#[serde(with = "crate::device::names")]` for a list of [`DeviceType`]s.
pub mod names {
    use super::*;

    /// Write the device types' stable names.
    pub fn serialize<S: Serializer>(devices: &[DeviceType], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(devices.iter().map(|d| d.as_str()))
    }

    /// Read device types from their stable names.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<DeviceType>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        names
            .iter()
            .map(|n| {
                DeviceType::from_name(n)
                    .ok_or_else(|| de::Error::custom(format_args!("unknown device type {n:?}")))
            })
            .collect()
    }
}
