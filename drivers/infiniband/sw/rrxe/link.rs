// SPDX-License-Identifier: GPL-2.0

//! Device lifetime: `rdma link add ... type rrxe` and the netdev events that follow.

use crate::{
    device::RrxeDev,
    ext::{
        net::{
            device::NetDevice,
            namespace::Net,
            notifier::{NetdevEvent, NetdevNotifier},
        },
        rdma::{
            device::{Device, DeviceParams, Registry},
            link::LinkOps,
            types::UverbsCmdMask,
        },
        workqueue::OwnedQueue,
    },
    net::{Nets, Rx},
};
use kernel::{
    c_str, new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    ThisModule,
};

/// Creates devices for `rdma link add NAME type rrxe netdev NETDEV`.
#[pin_data]
pub(crate) struct Link {
    module: &'static ThisModule,
    registry: Arc<Registry<RrxeDev>>,
    nets: Arc<Pin<KBox<Nets>>>,
    /// Receives the namespaces' RoCEv2 datagrams.
    rx: Arc<Rx>,
    /// Runs the QPs' work.
    wq: Arc<OwnedQueue>,
    /// Serialises creation, so that two devices cannot be made on one netdev.
    #[pin]
    create: Mutex<()>,
}

impl Link {
    /// The link type's state.
    pub(crate) fn new(
        module: &'static ThisModule,
        registry: Arc<Registry<RrxeDev>>,
        nets: Arc<Pin<KBox<Nets>>>,
        rx: Arc<Rx>,
        wq: Arc<OwnedQueue>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Link {
                module,
                registry,
                nets,
                rx,
                wq,
                create <- new_mutex!((), "rrxe:create"),
            }),
            GFP_KERNEL,
        )
    }
}

impl LinkOps for Link {
    const TYPE: &'static CStr = c_str!("rrxe");

    fn newlink(&self, name: &CStr, ndev: &NetDevice) -> Result {
        if ndev.is_vlan() {
            pr_err!(
                "{}: create on the VLAN's real device instead\n",
                ndev.name()
            );
            return Err(EPERM);
        }
        if !ndev.is_ethernet() {
            pr_err!("{}: not an Ethernet device\n", ndev.name());
            return Err(EINVAL);
        }
        let _create = self.create.lock();
        if Device::<RrxeDev>::netdev_has_device(ndev) {
            pr_err!("{}: already has an rxe or rrxe device\n", ndev.name());
            return Err(EEXIST);
        }
        let net = Net::of(ndev);
        let data = RrxeDev::new(
            ndev,
            self.nets.get(net).attach(net, &self.rx)?,
            self.wq.clone(),
        )?;
        let params = DeviceParams {
            node_desc: c_str!("rrxe"),
            node_guid: data.guid(),
            uverbs_cmd_mask: UverbsCmdMask::POST_SEND | UverbsCmdMask::REQ_NOTIFY_CQ,
        };
        Device::register(self.module, &self.registry, name, ndev, &params, data)?;
        pr_info!("{}: added on {}\n", name, ndev.name());
        Ok(())
    }
}

/// Follows the netdevs that carry rrxe devices.
pub(crate) struct Notifier {
    /// The module's devices.
    pub(crate) registry: Arc<Registry<RrxeDev>>,
}

impl NetdevNotifier for Notifier {
    fn notify(&self, event: NetdevEvent, ndev: &NetDevice) {
        let Some(dev) = self.registry.get_by_netdev(ndev) else {
            return;
        };
        match event {
            NetdevEvent::Unregister => {
                pr_info!("{}: {} is going away, removing\n", dev.name(), ndev.name());
                dev.unregister_queued();
            }
            NetdevEvent::Up | NetdevEvent::Down | NetdevEvent::Change => {
                RrxeDev::update_port_state(&dev, ndev);
            }
            // The active MTU is read from the netdev at each query.
            NetdevEvent::ChangeMtu => {}
        }
    }
}
