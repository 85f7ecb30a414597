"""A Vulkan compute device through the `vulkan` (cffi) package: instance, device and queue,
buffers in device memory, compute pipelines from SPIR-V, and timed dispatches.

Buffers stay in device memory until freed; uploads and downloads go through a host-visible
staging buffer (skipped where the device memory is host-visible itself, as on lavapipe)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mgxir.diagnostics import MgxError

VK_API_1_1 = (1 << 22) | (1 << 12)
DEVICE_ENV = "MGXIR_VULKAN_DEVICE"  # index of the physical device to use (default: the first GPU)


class NoVulkan(MgxError):
    """No Vulkan loader, driver or device: the target cannot run here."""


@functools.cache
def vulkan_module() -> Any:
    """The `vulkan` package, imported on first use (it loads libvulkan at import)."""
    try:
        import vulkan
    except ModuleNotFoundError:
        raise NoVulkan("the vulkan target needs the 'vulkan' Python package (pip install 'mgxir[vulkan]')") from None
    except OSError as e:
        raise NoVulkan(f"no Vulkan loader (libvulkan.so.1) found: {e}") from None
    return vulkan


@dataclass
class Buffer:
    """A device buffer of `size` bytes (device memory, freed by `Device.free`)."""

    handle: Any
    memory: Any
    size: int
    mapped: Any = None  # a host view where the memory is host-visible


@dataclass
class Pipeline:
    pipeline: Any
    layout: Any
    set_layout: Any
    module: Any
    bindings: int
    push_bytes: int


class Device:
    """One Vulkan physical device with a compute queue."""

    def __init__(self) -> None:
        vk = self.vk = vulkan_module()
        application = vk.VkApplicationInfo(
            sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, pApplicationName="mgxir", apiVersion=VK_API_1_1
        )
        try:
            self.instance = vk.vkCreateInstance(
                vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=application),
                None,
            )
        except vk.VkError as e:
            raise NoVulkan(f"no Vulkan driver: creating a Vulkan instance failed ({type(e).__name__})") from None
        physical = vk.vkEnumeratePhysicalDevices(self.instance)
        if not physical:
            raise NoVulkan("no Vulkan driver: the Vulkan loader found no physical device")
        self.physical = self._choose(physical)
        self.properties = vk.vkGetPhysicalDeviceProperties(self.physical)
        self.name = str(self.properties.deviceName)
        self.limits = self.properties.limits
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        self.family = next((i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT), None)
        if self.family is None:
            raise NoVulkan(f"Vulkan device '{self.name}' has no compute queue")
        self.timestamp_bits = families[self.family].timestampValidBits
        self.features = self._create_device()
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.pool = vk.vkCreateCommandPool(
            self.device,
            vk.VkCommandPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                queueFamilyIndex=self.family,
            ),
            None,
        )
        self.queries = vk.vkCreateQueryPool(
            self.device,
            vk.VkQueryPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2
            ),
            None,
        )
        self.descriptor_pool = vk.vkCreateDescriptorPool(
            self.device,
            vk.VkDescriptorPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                maxSets=256,
                poolSizeCount=1,
                pPoolSizes=[vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=4096)],
            ),
            None,
        )
        self.fence = vk.vkCreateFence(
            self.device, vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None
        )
        self.command = vk.vkAllocateCommandBuffers(
            self.device,
            vk.VkCommandBufferAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                commandPool=self.pool,
                level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                commandBufferCount=1,
            ),
        )[0]
        self.memory_types = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)

    def _choose(self, physical: Sequence[Any]) -> Any:
        vk = self.vk
        wanted = os.environ.get(DEVICE_ENV)
        if wanted is not None:
            try:
                return physical[int(wanted)]
            except (ValueError, IndexError):
                raise MgxError(f"{DEVICE_ENV}={wanted} names none of the {len(physical)} Vulkan devices") from None
        order = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0, vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1}
        return min(physical, key=lambda p: order.get(vk.vkGetPhysicalDeviceProperties(p).deviceType, 2))

    def _create_device(self) -> set[str]:
        """Creates the logical device with the 8- and 16-bit storage and 64-bit float features the
        device has."""
        vk = self.vk
        storage8 = vk.VkPhysicalDevice8BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES
        )
        storage16 = vk.VkPhysicalDevice16BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, pNext=storage8
        )
        query = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=storage16)
        vk.vkGetPhysicalDeviceFeatures2(self.physical, query)
        extensions = {str(e.extensionName) for e in vk.vkEnumerateDeviceExtensionProperties(self.physical, None)}
        features: set[str] = set()
        wanted_extensions = []
        has8 = bool(storage8.storageBuffer8BitAccess) and "VK_KHR_8bit_storage" in extensions
        has16 = bool(storage16.storageBuffer16BitAccess)
        if has8:
            features.add("StorageBuffer8BitAccess")
            wanted_extensions.append("VK_KHR_8bit_storage")
        if has16:
            features.add("StorageBuffer16BitAccess")
        has64 = bool(query.features.shaderFloat64)  # kernels compute some steps in double
        if has64:
            features.add("Float64")
        has_int64 = bool(query.features.shaderInt64)
        if has_int64:
            features.add("Int64")
        enable8 = vk.VkPhysicalDevice8BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, storageBuffer8BitAccess=has8
        )
        enable16 = vk.VkPhysicalDevice16BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
            pNext=enable8,
            storageBuffer16BitAccess=has16,
        )
        enable = vk.VkPhysicalDeviceFeatures2(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
            pNext=enable16,
            features=vk.VkPhysicalDeviceFeatures(shaderFloat64=has64, shaderInt64=has_int64),
        )
        queue = vk.VkDeviceQueueCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            queueFamilyIndex=self.family,
            queueCount=1,
            pQueuePriorities=[1.0],
        )
        self.device = vk.vkCreateDevice(
            self.physical,
            vk.VkDeviceCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                pNext=enable,
                queueCreateInfoCount=1,
                pQueueCreateInfos=[queue],
                enabledExtensionCount=len(wanted_extensions),
                ppEnabledExtensionNames=wanted_extensions,
            ),
            None,
        )
        return features

    # -- memory -----------------------------------------------------------------------------------

    def _memory_type(self, bits: int, flags: int) -> int | None:
        for i in range(self.memory_types.memoryTypeCount):
            if bits & (1 << i) and (self.memory_types.memoryTypes[i].propertyFlags & flags) == flags:
                return i
        return None

    def allocate(self, size: int, host_visible: bool = False) -> Buffer:
        """A storage buffer in device-local memory (or host-visible memory for staging)."""
        vk = self.vk
        usage = (
            vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        )
        size = max(4, (size + 3) // 4 * 4)
        handle = vk.vkCreateBuffer(
            self.device,
            vk.VkBufferCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                size=size,
                usage=usage,
                sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
            ),
            None,
        )
        needs = vk.vkGetBufferMemoryRequirements(self.device, handle)
        visible = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        local = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        choice = None
        if not host_visible:
            # device memory (host-visible too on unified-memory devices such as lavapipe: no staging)
            choice = self._memory_type(needs.memoryTypeBits, local)
        if choice is None:
            choice = self._memory_type(needs.memoryTypeBits, visible)
        if choice is None:
            raise MgxError(f"Vulkan device '{self.name}' has no memory type for a {size}-byte buffer")
        try:
            memory = vk.vkAllocateMemory(
                self.device,
                vk.VkMemoryAllocateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, allocationSize=needs.size, memoryTypeIndex=choice
                ),
                None,
            )
        except vk.VkError as e:
            vk.vkDestroyBuffer(self.device, handle, None)
            raise MgxError(f"Vulkan device '{self.name}' cannot allocate {size} bytes ({type(e).__name__})") from None
        vk.vkBindBufferMemory(self.device, handle, memory, 0)
        mapped = None
        if self.memory_types.memoryTypes[choice].propertyFlags & visible == visible:
            mapped = vk.vkMapMemory(self.device, memory, 0, size, 0)
        return Buffer(handle, memory, size, mapped)

    def free(self, buffer: Buffer) -> None:
        vk = self.vk
        if buffer.mapped is not None:
            vk.vkUnmapMemory(self.device, buffer.memory)
        vk.vkDestroyBuffer(self.device, buffer.handle, None)
        vk.vkFreeMemory(self.device, buffer.memory, None)

    def upload(self, data: np.ndarray) -> Buffer:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        buffer = self.allocate(raw.size)
        if buffer.mapped is not None:
            np.frombuffer(buffer.mapped, np.uint8)[: raw.size] = raw
            return buffer
        staging = self.allocate(raw.size, host_visible=True)
        np.frombuffer(staging.mapped, np.uint8)[: raw.size] = raw
        self.copy(staging, buffer, raw.size)
        self.free(staging)
        return buffer

    def download(self, buffer: Buffer, size: int) -> np.ndarray:
        if buffer.mapped is not None:
            return np.frombuffer(buffer.mapped, np.uint8)[:size].copy()
        staging = self.allocate(size, host_visible=True)
        self.copy(buffer, staging, size)
        data = np.frombuffer(staging.mapped, np.uint8)[:size].copy()
        self.free(staging)
        return data

    def copy(self, source: Buffer, target: Buffer, size: int, repeat: int = 1) -> float:
        """A device copy of `size` bytes (`repeat` times in one submission); seconds on the device."""
        vk = self.vk

        def record(command: Any) -> None:
            for _ in range(repeat):
                vk.vkCmdCopyBuffer(command, source.handle, target.handle, 1, [vk.VkBufferCopy(0, 0, size)])

        return self.submit(record)

    # -- pipelines and dispatch -------------------------------------------------------------------

    def pipeline(self, code: bytes, bindings: int, push_bytes: int, entry: str = "main") -> Pipeline:
        vk = self.vk
        module = vk.vkCreateShaderModule(
            self.device,
            vk.VkShaderModuleCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(code), pCode=code
            ),
            None,
        )
        set_layout = vk.vkCreateDescriptorSetLayout(
            self.device,
            vk.VkDescriptorSetLayoutCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                bindingCount=bindings,
                pBindings=[
                    vk.VkDescriptorSetLayoutBinding(
                        binding=i,
                        descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                        descriptorCount=1,
                        stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                    )
                    for i in range(bindings)
                ],
            ),
            None,
        )
        layout = vk.vkCreatePipelineLayout(
            self.device,
            vk.VkPipelineLayoutCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                setLayoutCount=1,
                pSetLayouts=[set_layout],
                pushConstantRangeCount=1,
                pPushConstantRanges=[
                    vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_bytes)
                ],
            ),
            None,
        )
        stage = vk.VkPipelineShaderStageCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            module=module,
            pName=entry,
        )
        pipeline = vk.vkCreateComputePipelines(
            self.device,
            None,
            1,
            [
                vk.VkComputePipelineCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage, layout=layout
                )
            ],
            None,
        )[0]
        return Pipeline(pipeline, layout, set_layout, module, bindings, push_bytes)

    def descriptor_set(self, pipeline: Pipeline, buffers: Sequence[Buffer]) -> Any:
        vk = self.vk
        descriptor = vk.vkAllocateDescriptorSets(
            self.device,
            vk.VkDescriptorSetAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                descriptorPool=self.descriptor_pool,
                descriptorSetCount=1,
                pSetLayouts=[pipeline.set_layout],
            ),
        )[0]
        writes = [
            vk.VkWriteDescriptorSet(
                sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                dstSet=descriptor,
                dstBinding=i,
                descriptorCount=1,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=b.handle, offset=0, range=b.size)],
            )
            for i, b in enumerate(buffers)
        ]
        vk.vkUpdateDescriptorSets(self.device, len(writes), writes, 0, None)
        return descriptor

    def release_set(self, descriptor: Any) -> None:
        self.vk.vkFreeDescriptorSets(self.device, self.descriptor_pool, 1, [descriptor])

    def dispatch(self, pipeline: Pipeline, descriptor: Any, push: Sequence[int], groups: int, repeat: int = 1) -> float:
        """Runs the pipeline over `groups` workgroups (`repeat` times, with a barrier between
        runs); returns seconds on the device (timestamps) for all of them."""
        vk = self.vk
        words = vk.ffi.new("uint32_t[]", [int(v) for v in push])
        size = 4 * len(push)

        def record(command: Any) -> None:
            vk.vkCmdBindPipeline(command, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline)
            vk.vkCmdBindDescriptorSets(
                command, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, [descriptor], 0, None
            )
            vk.vkCmdPushConstants(command, pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, size, words)
            for i in range(repeat):
                if i:
                    self._barrier(command)
                vk.vkCmdDispatch(command, groups, 1, 1)

        return self.submit(record)

    def _barrier(self, command: Any) -> None:
        vk = self.vk
        access = vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_SHADER_READ_BIT
        vk.vkCmdPipelineBarrier(
            command,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            0,
            1,
            [vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, srcAccessMask=access, dstAccessMask=access)],
            0,
            None,
            0,
            None,
        )

    def submit(self, record: Any) -> float:
        """Records commands between two timestamps, submits, waits; seconds between the stamps."""
        vk = self.vk
        command = self.command
        vk.vkResetCommandBuffer(command, 0)
        vk.vkBeginCommandBuffer(
            command,
            vk.VkCommandBufferBeginInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            ),
        )
        timed = self.timestamp_bits > 0
        if timed:
            vk.vkCmdResetQueryPool(command, self.queries, 0, 2)
            vk.vkCmdWriteTimestamp(command, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.queries, 0)
        record(command)
        if timed:
            vk.vkCmdWriteTimestamp(command, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.queries, 1)
        vk.vkEndCommandBuffer(command)
        vk.vkResetFences(self.device, 1, [self.fence])
        vk.vkQueueSubmit(
            self.queue,
            1,
            [vk.VkSubmitInfo(sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1, pCommandBuffers=[command])],
            self.fence,
        )
        vk.vkWaitForFences(self.device, 1, [self.fence], vk.VK_TRUE, 2**63 - 1)
        if not timed:
            return float("nan")
        stamps = vk.ffi.new("uint64_t[2]")
        vk.vkGetQueryPoolResults(
            self.device, self.queries, 0, 2, 16, stamps, 8, vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT
        )
        return (stamps[1] - stamps[0]) * self.properties.limits.timestampPeriod * 1e-9

    def close(self) -> None:
        vk = self.vk
        vk.vkDeviceWaitIdle(self.device)
        vk.vkDestroyFence(self.device, self.fence, None)
        vk.vkDestroyDescriptorPool(self.device, self.descriptor_pool, None)
        vk.vkDestroyQueryPool(self.device, self.queries, None)
        vk.vkDestroyCommandPool(self.device, self.pool, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)

    def destroy_pipeline(self, pipeline: Pipeline) -> None:
        vk = self.vk
        vk.vkDestroyPipeline(self.device, pipeline.pipeline, None)
        vk.vkDestroyPipelineLayout(self.device, pipeline.layout, None)
        vk.vkDestroyDescriptorSetLayout(self.device, pipeline.set_layout, None)
        vk.vkDestroyShaderModule(self.device, pipeline.module, None)
