/** @module app/services/accounts — API keys and wallets (and their admin routes): the data dir's key file and ledger WAL, or in cluster mode the KV bucket svc_keys and the ledger stream svc_ledger. */
import { KeyStore, type KeyBook } from "../../account/keys.js";
import type { PriceTable } from "../../account/prices.js";
import { Wallets } from "../../account/wallet.js";
import type { WalletBook } from "../../account/wallet-book.js";
import { adminRoutes } from "../../http/routes/admin.js";
import type { Reporter } from "../../store/reporter.js";
import { join } from "node:path";
import type { ClusterNode } from "../cluster-node.js";
import type { ProductService } from "../product-service.js";

export interface AccountsService extends ProductService {
  readonly keys: KeyBook;
  readonly wallets: WalletBook;
}

/** Opened before every other service: they meter and charge through the wallets. */
export async function openAccounts(
  dataDir: string,
  prices: PriceTable,
  cluster: ClusterNode | null,
  reporter: Reporter,
): Promise<AccountsService> {
  // Keys: the KV bucket svc_keys in cluster mode (this data dir's keys.json is imported into it).
  const keys: KeyBook = cluster ? await cluster.openKeys(dataDir) : KeyStore.open(dataDir, reporter);
  // Wallets: the ledger stream svc_ledger in cluster mode, the data dir's ledger WAL otherwise (it takes the data dir's writer lock).
  const wallets: WalletBook & { close(): Promise<void> } = cluster
    ? await cluster.openWallets(prices)
    : await Wallets.open(join(dataDir, "wallet"), prices, reporter);
  return { name: "accounts", keys, wallets, routes: adminRoutes({ keys, wallets }), close: () => wallets.close() };
}
